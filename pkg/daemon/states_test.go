package daemon

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/channel"
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
			session.ActionBroken, session.ActionOrphanWorker, session.ActionRemovedLeftover, session.ActionRestarted},
		[]string{string(wire.ReconcileAttached), string(wire.ReconcileMarkedDead), string(wire.ReconcileLeftUnknown), string(wire.ReconcileEnded),
			string(wire.ReconcileBroken), string(wire.ReconcileOrphanWorker), string(wire.ReconcileRemovedLeftover), string(wire.ReconcileRestarted)})

	ds, ws = nil, nil
	for _, e := range []session.EventType{session.EventOutput, session.EventInput, session.EventAsk, session.EventAnswer,
		session.EventResize, session.EventSignal, session.EventExit, session.EventMarker, session.EventGap, session.EventRestarted} {
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
		capture.KindKey, capture.KindScroll, capture.KindWait, capture.KindFocus, capture.KindKeyDown, capture.KindKeyUp}, ws)
}

// TestSessionTokenVariableIsTheContracts: the worker sets the variable the
// wire client reads (and the channel component names in its refusals);
// spelled once per side, they must agree.
func TestSessionTokenVariableIsTheContracts(t *testing.T) {
	if session.TokenEnv != wire.SessionTokenEnv || channel.TokenEnv != wire.SessionTokenEnv {
		t.Errorf("the session component sets %s, the channel component names %s, the wire client reads %s", session.TokenEnv, channel.TokenEnv, wire.SessionTokenEnv)
	}
}

// TestChannelValuesAreTheContracts: the channel component's limits, ask
// routes and the ask message it writes are the ones the contract states to
// clients.
func TestChannelValuesAreTheContracts(t *testing.T) {
	for _, l := range []struct {
		what             string
		domain, contract int
	}{
		{"message", channel.MaxMessage, wire.MaxChannelMessage},
		{"id", channel.MaxIDLen, wire.MaxChannelIDLen},
		{"description", channel.MaxDescription, wire.MaxChannelDescription},
		{"reply", channel.MaxReply, wire.MaxChannelReply},
	} {
		if l.domain != l.contract {
			t.Errorf("the %s limit: the channel component's is %d, the contract's %d", l.what, l.domain, l.contract)
		}
	}
	for _, v := range []struct {
		domain   channel.Via
		contract wire.AskVia
	}{{channel.ViaAuto, wire.ViaAuto}, {channel.ViaPTY, wire.ViaPTY}, {channel.ViaChannel, wire.ViaChannel}} {
		if string(v.domain) != string(v.contract) {
			t.Errorf("ask route %q is %q in the contract", v.domain, v.contract)
		}
	}
	domain, _ := json.Marshal(channel.AskMessage{Kind: channel.AskMessageKind, AskID: "ask-1", Text: "6*7?"})
	contract, _ := json.Marshal(wire.ChannelAsk{Kind: wire.ChannelAskKind, AskID: "ask-1", Text: "6*7?"})
	if string(domain) != string(contract) {
		t.Errorf("the ask message the channel component writes is %s; the contract's is %s", domain, contract)
	}
}
