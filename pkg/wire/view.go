package wire

import "context"

// MethodView starts agentd's page for people (the view: the session list
// and each session's terminal, on 127.0.0.1 only) if it is not listening,
// and answers a URL that opens it once.
const MethodView = "agent.view"

// ViewParams ask for the view's URL; Name, when given, is the session
// whose terminal the page opens on.
type ViewParams struct {
	Name string `json:"name,omitempty"`
	// Desktop, when given, opens the desktop page on that desktop
	// instead (agentctl desktop view).
	Desktop string `json:"desktop,omitempty"`
}

// ViewResult is where the view listens. URL holds a one-time token, good
// for a short while: the page trades it for a cookie and drops it from
// the address bar. IdleMS is how long the view keeps listening with no
// page connected.
type ViewResult struct {
	URL    string `json:"url"`
	Port   int    `json:"port"`
	IdleMS int64  `json:"idle_ms"`
}

// View starts the view if needed and returns a URL that opens it once.
func (c *Client) View(ctx context.Context, p ViewParams) (*ViewResult, error) {
	return call[ViewResult](ctx, c, MethodView, p)
}
