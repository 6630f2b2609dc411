package main

// stop, rm and status take several names, or --all, as docker's and
// systemctl's verbs do: each session is handled on its own (one that fails
// does not stop the others), the results print in the order given, and
// the exit status is the first failure's.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentd/agentd/pkg/wire"
)

// manyResult is the result of a verb on sessions by name. A single name
// (without --all) gives that session's result as the verb always did;
// several, or --all, give each one's result in the order given and the
// failures.
type manyResult[R any] struct {
	Results []R          `json:"results"`
	Errors  []manyFailed `json:"errors"`
	// single is one name without --all: Results[0] is the whole result.
	single bool
	// stderr is where a person reads the failures.
	stderr io.Writer
}

// MarshalJSON is Results[0] for a single name, else the results and the
// failures; "<" stays "<" (agentctl's JSON is not for HTML).
func (m *manyResult[R]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	var err error
	if m.single {
		err = enc.Encode(m.Results[0])
	} else {
		type plain manyResult[R] // its fields, without this method
		err = enc.Encode((*plain)(m))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
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
	r, err := e.client().List(ctx, wire.ListParams{})
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
// in order. A single name without all gives its result or error as the
// verb always did; several give each one's, and the run's status is the
// first failure's.
func each[R any](ctx context.Context, e *env, names []string, all bool, one func(ctx context.Context, name string) (R, error)) (*manyResult[R], error) {
	m := &manyResult[R]{Results: []R{}, Errors: []manyFailed{}, stderr: e.stderr}
	if len(names) == 1 && !all {
		r, err := one(ctx, names[0])
		if err != nil {
			return nil, err
		}
		m.Results, m.single = append(m.Results, r), true
		return m, nil
	}
	results := make([]R, len(names))
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

// printMany is the printer of a manyResult: a single name's result by
// single, several by each in turn and then each failure as agentctl
// prints an error, on stderr.
func printMany[R any](single, each func(io.Writer, R) error) func(io.Writer, *manyResult[R]) error {
	return func(w io.Writer, m *manyResult[R]) error {
		if m.single {
			return single(w, m.Results[0])
		}
		for _, r := range m.Results {
			if err := each(w, r); err != nil {
				return err
			}
		}
		for _, f := range m.Errors {
			fmt.Fprintf(m.stderr, "agentctl: %s\n", safeText(f.err.Error()))
		}
		return nil
	}
}
