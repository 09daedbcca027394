package adoption

import (
	"context"
	"fmt"
	"time"
)

// Step is one step of the move. Each is idempotent and observed, not recorded: Waiting
// reads the cluster and says what the step still waits for ("" once it holds), and Do
// brings it about. So a run cut short anywhere is resumed by running again, from any
// machine: every step that holds is passed over.
type Step struct {
	Name string
	// Do acts once, when the step does not hold yet; nil for a step that only waits (for
	// MCO's rollout, say).
	Do func(ctx context.Context) error
	// Waiting is "" when the step holds, else what it waits for.
	Waiting func(ctx context.Context) (string, error)
}

// Progress hears what a run does: a step that already held, one done, or one still
// waiting (said once per change of what it waits for).
type Progress func(step int, of int, name, event string)

// Run takes the steps in order: a step that holds is passed over; one that does not is
// done, then waited for, polling every poll, until it holds. When ctx ends first, the
// error names the step and what it still waits for; running again resumes there. Steps
// whose last holds are over, each held: a later step may undo what an earlier one did
// (the move's end removes the spec.migrateFrom its sixth step set), which a run after the
// end must not do again.
func Run(ctx context.Context, steps []Step, poll time.Duration, progress Progress) error {
	if len(steps) > 0 {
		over, err := steps[len(steps)-1].Waiting(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", steps[len(steps)-1].Name, err)
		}
		if over == "" {
			for i, s := range steps {
				progress(i+1, len(steps), s.Name, "held already")
			}
			return nil
		}
	}
	for i, s := range steps {
		waiting, err := s.Waiting(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if waiting == "" {
			progress(i+1, len(steps), s.Name, "held already")
			continue
		}
		if s.Do != nil {
			if err := s.Do(ctx); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		}
		said := ""
		for {
			if waiting, err = s.Waiting(ctx); err != nil {
				if ctx.Err() != nil { // the deadline, not the cluster
					return fmt.Errorf("%s: still waiting: %s (run again to resume)", s.Name, said)
				}
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			if waiting == "" {
				progress(i+1, len(steps), s.Name, "done")
				break
			}
			if waiting != said {
				progress(i+1, len(steps), s.Name, "waiting: "+waiting)
				said = waiting
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: still waiting: %s (run again to resume)", s.Name, waiting)
			case <-time.After(poll):
			}
		}
	}
	return nil
}
