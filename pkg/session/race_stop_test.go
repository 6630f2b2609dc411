package session

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// knownKind reports whether err wraps one of the session's sentinels, so
// the daemon turns it into a code of its own and not internal.
func knownKind(err error) bool {
	for _, k := range Kinds() {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// TestAskAndSendRacingStopAndRemoveNeverFailUnknown: asks and sends that
// race a session's stop and its forced removal end with nil or one of the
// session's sentinels (the session ended, is gone, is stopping), never an
// error the daemon would have to call internal.
func TestAskAndSendRacingStopAndRemoveNeverFailUnknown(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 120*time.Second)
	// Each round is a session raced to its end; 30 rounds hit the race
	// every run here, where 1,400 agentctl calls hit it 4 times.
	rounds := 30
	if testing.Short() || raceEnabled {
		rounds = 8
	}
	var mu sync.Mutex
	var bad []string
	note := func(op string, err error) {
		if err != nil && !knownKind(err) && ctx.Err() == nil {
			mu.Lock()
			if len(bad) < 10 {
				bad = append(bad, fmt.Sprintf("%s: %v (%T)", op, err, err))
			}
			mu.Unlock()
		}
	}
	for r := 0; r < rounds; r++ {
		name := fmt.Sprintf("race%d", r)
		spawn(t, m, name, "cat")
		var wg, enders sync.WaitGroup
		done := make(chan struct{})
		for i := 0; i < 4; i++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					_, err := m.Ask(ctx, AskRequest{Name: name, Text: "hello", Timeout: 3 * time.Second, Idle: 20 * time.Millisecond})
					note("ask", err)
				}
			}()
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					note("send", m.Send(ctx, SendRequest{Name: name, Text: "x\n"}))
				}
			}()
		}
		enders.Add(3)
		go func() {
			defer enders.Done()
			_, err := m.Stop(ctx, StopRequest{Name: name, Signal: "KILL", Grace: time.Millisecond})
			note("stop", err)
		}()
		for i := 0; i < 2; i++ {
			go func() {
				defer enders.Done()
				note("rm --force", m.Remove(ctx, name, true))
			}()
		}
		enders.Wait()
		// The calls go on a moment after the session has gone.
		for i := 0; i < 3; i++ {
			note("send after", m.Send(ctx, SendRequest{Name: name, Text: "x\n"}))
		}
		close(done)
		wg.Wait()
		// Whatever the order, the session can be removed at the end.
		m.Remove(ctx, name, true)
	}
	if len(bad) > 0 {
		t.Fatalf("%d calls failed with an error of no session kind (internal at the daemon):\n%v", len(bad), bad)
	}
}
