package node

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/migration"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Migration is a node's move from kubernetes-nmstate, whose handler wrote every policy's
// profiles into NetworkManager's persistent keyfile dir. Until the node runs on the
// overlay, the handler keeps a plan on the node of the persistent profiles the policies
// in force wrote; nm-overlay moves them out at the first boot on the overlay, before it is
// mounted, and the handler then applies the policies into the tmpfs layer.
type Migration struct {
	// Planner is the backend's reading of its persistent profiles.
	Planner backend.PersistentPlanner
	// Lower is the persistent keyfile dir, as the handler's pod sees it; PlanPath where the
	// plan goes (on the host, paths.MigrationPlan).
	Lower, PlanPath string
	// APIServer is the API server's address, whose route the node needs to boot.
	APIServer netip.Addr
	// Changed, when set, is called after a new plan is written: the NodeNetworkState
	// reports it, and nmoverlay migrate waits for that before any node reboots.
	Changed func()

	// last is the plan last written, to log only a change.
	last *migration.Plan
}

// planMigration writes the node's migration plan: the policies in force (selected,
// rendered, not refused) against the persistent profiles, keeping what the node needs to
// reach the cluster (its default route's interface, its API server route's, its
// InternalIP's, per current). Only while the node is not on the overlay: once it is, the
// plan written last is what the next boot carries out.
func (h *Handler) planMigration(ctx context.Context, v *nodeView) error {
	m := h.Migration
	if m == nil || v.degraded == "" {
		return nil
	}
	var sources []backend.Parsed
	for _, pol := range v.selected {
		if pol.Refused != "" || pol.CaptureError != "" {
			continue
		}
		parsed, err := h.Backend.Parse(pol.DesiredState)
		if err != nil {
			continue // refused on the enactment by the pass
		}
		sources = append(sources, backend.Parsed{Policy: pol.Name, State: parsed})
	}
	current, err := h.Backend.Show(ctx)
	if err != nil {
		return fmt.Errorf("reading the node's state for its migration plan: %w", err)
	}
	critical := state.CriticalInterfaces(current, m.APIServer, shared.InternalIPs(v.node))
	plan, err := m.Planner.PersistentPlan(m.Lower, sources, critical)
	if err != nil {
		return fmt.Errorf("reading the persistent profiles for the migration plan: %w", err)
	}
	if m.last != nil && samePlan(*m.last, plan) {
		return nil
	}
	if err := migration.WritePlan(m.PlanPath, migration.PlanFile{Lower: m.Lower, Made: time.Now().UTC(), Plan: plan}); err != nil {
		return fmt.Errorf("writing the migration plan: %w", err)
	}
	m.last = &plan
	if m.Changed != nil {
		m.Changed()
	}
	ctrl.LoggerFrom(ctx).Info("migration plan: persistent profiles the policies wrote, moved at the next boot on the overlay",
		"node", h.NodeName, "move", files(plan.Move), "stay", files(plan.Stay), "critical", critical)
	return nil
}

func files(entries []migration.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.File)
	}
	return out
}

// samePlan: the same profiles, as they were, to move and to keep, for the same reasons.
func samePlan(a, b migration.Plan) bool {
	eq := func(x, y migration.Entry) bool {
		return x.Profile == y.Profile && x.Why == y.Why && slices.Equal(x.Policies, y.Policies)
	}
	return slices.EqualFunc(a.Move, b.Move, eq) && slices.EqualFunc(a.Stay, b.Stay, eq)
}

// MigrationStatus is what the NodeNetworkState says of the node's move from
// kubernetes-nmstate: the plan at planPath (what the next boot on the overlay moves, what
// stays), and the latest move recorded under migratedDir (what it moved, and where the
// backup is).
func MigrationStatus(planPath, migratedDir string) (*v1beta1.MigrationStatus, error) {
	st := &v1beta1.MigrationStatus{}
	plan, err := migration.ReadPlan(planPath)
	if err != nil {
		return nil, err
	}
	if plan != nil {
		st.Move, st.Stay = persistentProfiles(plan.Move), persistentProfiles(plan.Stay)
	}
	backups, err := migration.Backups(migratedDir)
	if err != nil {
		return nil, err
	}
	if len(backups) > 0 {
		last := backups[len(backups)-1]
		r, err := migration.ReadResult(last)
		if err != nil {
			return nil, err
		}
		st.Backup = last
		for _, e := range r.Plan.Move {
			if o, ok := r.Outcomes[e.File]; ok {
				p := persistentProfile(e)
				p.Detail = string(o)
				st.Moved = append(st.Moved, p)
			}
		}
	}
	if st.Move == nil && st.Stay == nil && st.Moved == nil {
		return nil, nil
	}
	return st, nil
}

func persistentProfiles(entries []migration.Entry) []v1beta1.PersistentProfile {
	var out []v1beta1.PersistentProfile
	for _, e := range entries {
		out = append(out, persistentProfile(e))
	}
	return out
}

func persistentProfile(e migration.Entry) v1beta1.PersistentProfile {
	return v1beta1.PersistentProfile{File: e.File, Interface: e.Interface, Type: e.Type, Policies: e.Policies, Detail: e.Why}
}
