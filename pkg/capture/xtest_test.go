package capture

// dialX connects to display with $XAUTHORITY's cookie, as the tests'
// servers expect.
func dialX(display string) (*xconn, error) { return dialXAuth(display, "") }

// roundTrips is how many replies and errors the server has sent: each is
// a round trip some caller waited for (a benchmark's and a test's measure
// of what an action costs).
func (s *xsock) roundTrips() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replies
}
