package adoption

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A step passes over what holds, does what does not once, waits for it, and stops at the
// deadline naming the step and what it waits for; a second run resumes there.
func TestRun(t *testing.T) {
	holds := map[string]bool{"a": true}
	did := map[string]int{}
	step := func(name string, makesHold bool) Step {
		return Step{Name: name,
			Do: func(context.Context) error {
				did[name]++
				holds[name] = makesHold
				return nil
			},
			Waiting: func(context.Context) (string, error) {
				if holds[name] {
					return "", nil
				}
				return name + " not yet", nil
			}}
	}
	steps := []Step{step("a", true), step("b", true), step("c", false), step("d", true)}
	var events []string
	progress := func(i, n int, name, event string) { events = append(events, name+": "+event) }

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := Run(ctx, steps, 5*time.Millisecond, progress)
	if err == nil || !strings.Contains(err.Error(), "c: still waiting: c not yet (run again to resume)") {
		t.Fatalf("want c still waiting, got %v", err)
	}
	if did["a"] != 0 || did["b"] != 1 || did["c"] != 1 || did["d"] != 0 {
		t.Errorf("done %v: want b and c once, a (held) and d (after c) never", did)
	}
	want := []string{"a: held already", "b: done", "c: waiting: c not yet"}
	if strings.Join(events, "|") != strings.Join(want, "|") {
		t.Errorf("progress %q, want %q (a wait said once)", events, want)
	}

	holds["c"] = true // what the cluster did meanwhile
	events = nil
	if err := Run(context.Background(), steps, time.Millisecond, progress); err != nil {
		t.Fatal(err)
	}
	if did["b"] != 1 || did["c"] != 1 || did["d"] != 1 {
		t.Errorf("resumed: done %v, want b and c not again and d once", did)
	}

	boom := errors.New("forbidden")
	failing := []Step{{Name: "x", Do: func(context.Context) error { return boom },
		Waiting: func(context.Context) (string, error) { return "x", nil }}}
	if err := Run(context.Background(), failing, time.Millisecond, progress); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "x: ") {
		t.Errorf("a failing step: %v", err)
	}
}

// Once the last step holds the steps are over: an earlier step a later one undid (the
// move's end removes what its sixth step set) is not done again.
func TestRunOver(t *testing.T) {
	did := 0
	undone := Step{Name: "set", Do: func(context.Context) error { did++; return nil },
		Waiting: func(context.Context) (string, error) { return "unset by the end", nil }}
	end := Step{Name: "end", Waiting: func(context.Context) (string, error) { return "", nil }}
	var events []string
	err := Run(context.Background(), []Step{undone, end}, time.Millisecond, func(i, n int, name, event string) {
		events = append(events, name+": "+event)
	})
	if err != nil || did != 0 || strings.Join(events, "|") != "set: held already|end: held already" {
		t.Errorf("err %v, done %d times, progress %q: want every step held and none done", err, did, events)
	}
}
