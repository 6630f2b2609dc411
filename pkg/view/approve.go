package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/agentd/agentd/pkg/wire"
)

// ApproveRequest is the body of POST /api/approve: the page's Approve or
// Deny button on the prompt it showed.
type ApproveRequest struct {
	Name     string `json:"name"`
	PromptID string `json:"prompt_id"`
	Deny     bool   `json:"deny,omitempty"`
}

// ApproveAnswer is POST /api/approve's answer: the result, or the error's
// code and message (what the screen shows now, when the prompt changed).
type ApproveAnswer struct {
	Result  *wire.ApproveResult `json:"result,omitempty"`
	Code    string              `json:"code,omitempty"`
	Message string              `json:"message,omitempty"`
}

// maxApproveBody bounds an approve request's body.
const maxApproveBody = 4 << 10

// approve answers a session's permission prompt as agentctl approve/deny
// NAME --prompt ID does. It is the one request that acts without a
// WebSocket, so it takes only what the page's own script sends: the
// cookie (authed), an Origin that is the page's, a same-origin fetch when
// the browser says (Sec-Fetch-Site), and a JSON body, which a form of
// another site cannot send without a preflight this server never grants.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, a ApproveAnswer) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(a)
	}
	if origin := r.Header.Get("Origin"); !originAllowed(origin, r.Host) {
		s.log.Warn().Str("origin", origin).Str("remote", r.RemoteAddr).Msg("view approve refused: foreign or missing Origin")
		answer(http.StatusForbidden, ApproveAnswer{Code: "forbidden", Message: "approve from another origin refused: use the Approve button in agentd's view page"})
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		answer(http.StatusForbidden, ApproveAnswer{Code: "forbidden", Message: "approve from another site refused (Sec-Fetch-Site " + site + ")"})
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		answer(http.StatusUnsupportedMediaType, ApproveAnswer{Code: "invalid_params", Message: "approve takes a JSON body (Content-Type: application/json)"})
		return
	}
	var req ApproveRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxApproveBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		answer(http.StatusBadRequest, ApproveAnswer{Code: "invalid_params", Message: "approve's body: " + err.Error()})
		return
	}
	if req.Name == "" || req.PromptID == "" {
		answer(http.StatusBadRequest, ApproveAnswer{Code: "invalid_params", Message: "approve needs the session's name and the prompt_id the page showed"})
		return
	}
	var cookie [32]byte
	if c, err := r.Cookie(cookieName); err == nil {
		cookie = hash(c.Value)
	}
	role := "approve"
	if req.Deny {
		role = "deny"
	}
	res, err := s.opts.Sessions.Approve(r.Context(), req.Name, req.Deny, req.PromptID, s.leaseFor(req.Name, cookie))
	if err != nil {
		code, status := "failed", http.StatusInternalServerError
		var we *wire.Error
		if errors.As(err, &we) {
			code = string(we.Code)
			switch we.Code {
			case wire.CodeAgentNotFound:
				status = http.StatusNotFound
			case wire.CodeInvalidStatus, wire.CodeBusy:
				status = http.StatusConflict
			case wire.CodeInvalidParams:
				status = http.StatusBadRequest
			}
		}
		s.log.Info().Str("session", req.Name).Str("prompt", req.PromptID).Str("role", role).Str("code", code).Err(err).Msg("view " + role + " refused")
		answer(status, ApproveAnswer{Code: code, Message: err.Error()})
		return
	}
	s.log.Info().Str("session", req.Name).Str("prompt", req.PromptID).Str("role", role).Str("choice", res.Choice).Msg(fmt.Sprintf("view page answered a prompt (%s)", role))
	answer(http.StatusOK, ApproveAnswer{Result: res})
}
