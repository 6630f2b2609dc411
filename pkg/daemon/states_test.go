package daemon

import (
	"testing"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// TestDomainValuesHaveWireTwins keeps the contract's typed constants and
// the domain's spelled alike: the daemon converts between them by string,
// so a status, termination, reason, reconcile action, event type or action
// kind added on one side only would reach clients as a value the contract
// does not name.
func TestDomainValuesHaveWireTwins(t *testing.T) {
	pairs := func(what string, domain, contract []string) {
		t.Helper()
		if len(domain) != len(contract) {
			t.Errorf("%s: the domain has %d values %q, the contract %d %q", what, len(domain), domain, len(contract), contract)
		}
		for _, d := range domain {
			found := false
			for _, c := range contract {
				found = found || c == d
			}
			if !found {
				t.Errorf("%s: the domain's %q has no wire constant", what, d)
			}
		}
	}
	var ds, ws []string
	for s := range session.StatusTable {
		ds = append(ds, string(s))
	}
	for _, s := range wire.Statuses {
		ws = append(ws, string(s))
	}
	pairs("statuses", ds, ws)

	ds, ws = nil, nil
	for _, s := range []session.Termination{session.TermCleanExit, session.TermNonzeroExit, session.TermSignalExit, session.TermHostDeath, session.TermSpawnFailure} {
		ds = append(ds, string(s))
	}
	for _, s := range wire.Terminations {
		ws = append(ws, string(s))
	}
	pairs("terminations", ds, ws)

	pairs("ask reasons",
		[]string{session.ReasonPrompt, session.ReasonIdle, session.ReasonMatched, session.ReasonExited},
		[]string{string(wire.AskReasonPrompt), string(wire.AskReasonIdle), string(wire.AskReasonMatched), string(wire.AskReasonExited)})
	pairs("wait reasons",
		[]string{session.ReasonMatched, session.ReasonIdle, session.ReasonExited},
		[]string{string(wire.WaitReasonMatched), string(wire.WaitReasonIdle), string(wire.WaitReasonExited)})
	pairs("reconcile actions",
		[]string{session.ActionAttached, session.ActionMarkedDead, session.ActionUnreachable, session.ActionEnded,
			session.ActionBroken, session.ActionOrphanWorker, session.ActionRemovedLeftover},
		[]string{string(wire.ReconcileAttached), string(wire.ReconcileMarkedDead), string(wire.ReconcileLeftUnknown), string(wire.ReconcileEnded),
			string(wire.ReconcileBroken), string(wire.ReconcileOrphanWorker), string(wire.ReconcileRemovedLeftover)})

	ds, ws = nil, nil
	for _, e := range []session.EventType{session.EventOutput, session.EventInput, session.EventAsk, session.EventAnswer,
		session.EventResize, session.EventSignal, session.EventExit, session.EventMarker, session.EventGap} {
		ds = append(ds, string(e))
	}
	for _, e := range wire.EventTypes {
		ws = append(ws, string(e))
	}
	pairs("event types", ds, ws)

	ws = nil
	for _, k := range wire.ActionKinds {
		ws = append(ws, string(k))
	}
	pairs("action kinds", []string{capture.KindClick, capture.KindMove, capture.KindDown, capture.KindUp, capture.KindType,
		capture.KindKey, capture.KindScroll, capture.KindWait, capture.KindFocus}, ws)
}

// TestSessionTokenVariableIsTheContracts: the worker sets the variable the
// wire client reads; spelled twice, once per side, they must agree.
func TestSessionTokenVariableIsTheContracts(t *testing.T) {
	if session.TokenEnv != wire.SessionTokenEnv {
		t.Errorf("the session component sets %s, the wire client reads %s", session.TokenEnv, wire.SessionTokenEnv)
	}
}
