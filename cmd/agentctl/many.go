package main

// stop, rm and status take several names, or --all, as docker's and
// systemctl's verbs do: each session is handled on its own (one that fails
// does not stop the others), the results print in the order given, and
// the exit status is the first failure's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentd/agentd/pkg/wire"
)

// manyResult is the result of a verb run on several sessions: each one's
// result, in the order given, and the failures.
type manyResult struct {
	Results []any        `json:"results"`
	Errors  []manyFailed `json:"errors"`
	// human prints one session's result.
	human func(io.Writer, any) error
}

// manyFailed is one session the verb failed on.
type manyFailed struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Message string `json:"message"`
	err     error
}

// targets are the sessions a verb runs on: the names given, or with all
// every session whose status pick accepts. Naming sessions and --all both
// is a usage error, as is neither.
func (e *env) targets(ctx context.Context, verbName string, names []string, all bool, pick func(wire.SessionRow) bool) ([]string, error) {
	switch {
	case all && len(names) > 0:
		return nil, usagef("%s: give session names or --all, not both", verbName)
	case !all && len(names) == 0:
		return nil, usagef("usage: agentctl %s NAME... (or --all); see agentctl %s --help", verbName, verbName)
	case !all:
		return names, nil
	}
	c, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.List(ctx, wire.ListParams{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range naturalSorted(r.Sessions) {
		if pick(s) {
			out = append(out, s.Name)
		}
	}
	return out, nil
}

// each runs one on every name, at once (a stop waits out its grace
// period, and ten of them should not take ten), and gathers the results
// in order. A single name gives its result or error as the verb always
// did; several give a manyResult, and the run's status is the first
// failure's.
func (e *env) each(ctx context.Context, names []string, human func(io.Writer, any) error, one func(ctx context.Context, name string) (any, error)) (any, error) {
	if len(names) == 1 && !e.all {
		return one(ctx, names[0])
	}
	results := make([]any, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = one(ctx, n)
		}()
	}
	wg.Wait()
	m := &manyResult{Results: []any{}, Errors: []manyFailed{}, human: human}
	for i, n := range names {
		if errs[i] != nil {
			f := manyFailed{Name: n, Code: string(wire.CodeInternal), Message: errs[i].Error(), err: errs[i]}
			var we *wire.Error
			if errors.As(errs[i], &we) {
				f.Code = string(we.Code)
			}
			m.Errors = append(m.Errors, f)
			if e.status == 0 {
				e.status = exitCode(errs[i])
			}
			continue
		}
		m.Results = append(m.Results, results[i])
	}
	return m, nil
}

// printMany prints each result as the verb does for one, then each
// failure as agentctl prints an error, on stderr.
func (e *env) printMany(w io.Writer, m *manyResult) error {
	for _, r := range m.Results {
		if err := m.human(w, r); err != nil {
			return err
		}
	}
	for _, f := range m.Errors {
		fmt.Fprintf(e.stderr, "agentctl: %s\n", safeText(f.err.Error()))
	}
	return nil
}
