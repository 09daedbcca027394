package migration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
)

// Entry is one persistent profile and what the plan does with it.
type Entry struct {
	Profile
	// Policies are the policies in force whose interface the profile is for; none when it
	// stays.
	Policies []string `json:"policies,omitempty"`
	// Why says, for a profile that stays, why.
	Why string `json:"why,omitempty"`
}

// Plan is what the migration does with a node's persistent profiles.
type Plan struct {
	// Move are the profiles the policies in force wrote: moved out of the persistent dir at
	// the node's first boot on the overlay, the handler applying their policies again.
	Move []Entry `json:"move"`
	// Stay are the others: no policy accounts for them, or the node needs them to boot.
	Stay []Entry `json:"stay"`
}

// PlanFile is the plan the handler writes on its node for nm-overlay: the persistent
// keyfile dir it read, and what to move out of it.
type PlanFile struct {
	// Lower is the persistent keyfile dir the plan was made from.
	Lower string    `json:"lower"`
	Made  time.Time `json:"made"`
	Plan
}

// WritePlan writes the plan for the next boot atomically, or removes it when it moves
// nothing (a node whose policies wrote no persistent profile has nothing to migrate).
func WritePlan(path string, p PlanFile) error {
	if len(p.Move) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return writeJSON(path, p)
}

// ReadPlan reads a plan; nil, nil when there is none.
func ReadPlan(path string) (*PlanFile, error) {
	var p PlanFile
	if err := readJSON(path, &p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &p, nil
}

// writeJSON writes v as indented JSON to path, atomically, readable by root alone, as the
// keyfiles it is about.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// readJSON reads what writeJSON wrote; the file's absence is fs.ErrNotExist.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Outcome is what Move or Restore did with one profile.
type Outcome string

const (
	Moved    Outcome = "moved"    // out of the persistent dir, into the backup
	Restored Outcome = "restored" // back into the persistent dir from the backup
	// Changed: the file is not what the plan saw (an administrator or MCO changed it since),
	// so it is left where it is.
	Changed Outcome = "changed since the plan: left"
	// Gone: the file the plan names is not in the persistent dir, nor in the backup.
	Gone Outcome = "gone: neither in the persistent dir nor in the backup"
	// Present: a restore found the same file in the persistent dir already.
	Present Outcome = "present already"
	// Occupied: a restore found another file of that name in the persistent dir: left.
	Occupied Outcome = "another file of that name is in the persistent dir: left"
)

// Result is what Move or Restore did, per profile, as recorded in the backup.
type Result struct {
	Plan     PlanFile           `json:"plan"`
	Outcomes map[string]Outcome `json:"outcomes"`
}

// Done says whether every profile reached the outcome wanted.
func (r Result) Done(want Outcome) bool {
	for _, o := range r.Outcomes {
		if o != want && o != Present {
			return false
		}
	}
	return true
}

// backup's layout: the plan followed, the result, and the profiles as they were.
const (
	backupPlan     = "plan.json"
	backupResult   = "result.json"
	backupProfiles = "profiles"
)

// Move carries out the plan at planPath: each profile it lists, if still as the plan saw
// it, is copied into backup (synced, and checked) and then removed from the plan's
// persistent dir. It must run before the overlay is mounted on that dir (mounted says
// whether it is: overlayfs does not allow changing a lower dir under it). The plan goes
// into the backup with the result, and is removed last, so an interrupted move is resumed
// by running it again: a profile already in the backup counts as moved. No plan: nothing
// to do, a nil result.
func Move(planPath, backup string, mounted func(dir string) (bool, error)) (*Result, error) {
	p, err := ReadPlan(planPath)
	if err != nil || p == nil {
		return nil, err
	}
	if on, err := mounted(p.Lower); err != nil {
		return nil, err
	} else if on {
		return nil, fmt.Errorf("the overlay is mounted on %s: profiles are moved out of it only before it is", p.Lower)
	}
	if err := writeJSON(filepath.Join(backup, backupPlan), p); err != nil {
		return nil, err
	}
	r := &Result{Plan: *p, Outcomes: map[string]Outcome{}}
	for _, e := range p.Move {
		o, err := moveOne(filepath.Join(p.Lower, e.File), filepath.Join(backup, backupProfiles, e.File), e.SHA256)
		if err != nil {
			return r, err
		}
		r.Outcomes[e.File] = o
	}
	if err := writeResult(backup, r); err != nil {
		return r, err
	}
	return r, os.Remove(planPath)
}

func moveOne(src, dst, sum string) (Outcome, error) {
	have, err := fileDigest(src)
	if errors.Is(err, fs.ErrNotExist) {
		if kept, _ := fileDigest(dst); kept == sum {
			return Moved, nil // an earlier, interrupted run moved it
		}
		return Gone, nil
	}
	if err != nil {
		return "", err
	}
	if have != sum {
		return Changed, nil
	}
	if err := copyFile(src, dst); err != nil {
		return "", err
	}
	if err := os.Remove(src); err != nil {
		return "", err
	}
	return Moved, atomicfile.SyncDir(filepath.Dir(src))
}

// ReadResult reads the result a move recorded in its backup.
func ReadResult(backup string) (*Result, error) {
	var r Result
	if err := readJSON(filepath.Join(backup, backupResult), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Restore puts the profiles a move put in backup back into the persistent dir, byte for
// byte and with their modes, refusing while the overlay is mounted on it. A profile whose
// name is taken there by another file is left, and said so. The backup is kept.
func Restore(backup string, mounted func(dir string) (bool, error)) (*Result, error) {
	moved, err := ReadResult(backup)
	if err != nil {
		return nil, fmt.Errorf("no completed move in %s: %w", backup, err)
	}
	lower := moved.Plan.Lower
	if on, err := mounted(lower); err != nil {
		return nil, err
	} else if on {
		return nil, fmt.Errorf("the overlay is mounted on %s: profiles are restored into it only once it is not", lower)
	}
	r := &Result{Plan: moved.Plan, Outcomes: map[string]Outcome{}}
	for _, e := range moved.Plan.Move {
		if moved.Outcomes[e.File] != Moved {
			continue
		}
		dst := filepath.Join(lower, e.File)
		switch have, err := fileDigest(dst); {
		case err == nil && have == e.SHA256:
			r.Outcomes[e.File] = Present
		case err == nil:
			r.Outcomes[e.File] = Occupied
		case errors.Is(err, fs.ErrNotExist):
			if err := copyFile(filepath.Join(backup, backupProfiles, e.File), dst); err != nil {
				return r, err
			}
			r.Outcomes[e.File] = Restored
		default:
			return r, err
		}
	}
	return r, nil
}

// Backups are the backups under dir, oldest first (named by boot, so ordered by their
// result's time).
func Backups(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type kept struct {
		dir string
		at  time.Time
	}
	var out []kept
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(dir, e.Name(), backupResult))
		if err != nil {
			continue // no completed move
		}
		out = append(out, kept{filepath.Join(dir, e.Name()), info.ModTime()})
	}
	slices.SortFunc(out, func(a, b kept) int { return a.at.Compare(b.at) })
	var dirs []string
	for _, k := range out {
		dirs = append(dirs, k.dir)
	}
	return dirs, nil
}

func writeResult(backup string, r *Result) error {
	return writeJSON(filepath.Join(backup, backupResult), r)
}

// copyFile copies src to dst atomically with src's mode, and checks the copy.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(dst, data, info.Mode().Perm()); err != nil {
		return err
	}
	if got, err := fileDigest(dst); err != nil || got != digest(data) {
		return fmt.Errorf("copying %s to %s: the copy differs (%v)", src, dst, err)
	}
	return nil
}
