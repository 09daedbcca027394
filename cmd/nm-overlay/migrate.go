package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/nmoverlay/nmoverlay/internal/migration"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// migrateProfiles runs `nm-overlay migrate-profiles` (nm-overlay-migrate.service, at a
// boot that finds a migration plan, before the overlay is mounted): the persistent
// profiles kubernetes-nmstate's policies wrote leave the keyfile dir for this boot's
// backup. Without a plan it does nothing.
func migrateProfiles(out printer, stderr io.Writer) int {
	boot, err := os.ReadFile(paths.KernelBootIDFile)
	if err != nil {
		fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
		return exitDegraded
	}
	backup := filepath.Join(paths.MigratedDir, strings.TrimSpace(string(boot)))
	r, err := migration.Move(paths.MigrationPlan, backup, overlay.LowerInUse)
	if r != nil {
		logResult("moved", migration.Moved, backup, r)
		out.result(r)
	}
	if err != nil {
		log(journal.PriErr, "migration: "+err.Error(), map[string]string{"NMOVERLAY_MIGRATION": "failed"})
		fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
		return exitDegraded
	}
	if r == nil {
		fmt.Fprintln(out.w, "no migration plan: nothing to move")
	}
	return exitOK
}

// restoreProfiles runs `nm-overlay restore-profiles [--from DIR]`: the profiles a
// migration moved go back into the persistent keyfile dir (from the latest backup by
// default), where the overlay is not mounted; NetworkManager, if it runs, reloads them.
// Run in a pod by nmoverlay migrate --rollback, or by hand.
func restoreProfiles(from string, out printer, stderr io.Writer) int {
	if from == "" {
		dirs, err := migration.Backups(paths.MigratedDir)
		if err != nil || len(dirs) == 0 {
			fmt.Fprintf(stderr, "nm-overlay: no migration backup in %s (%v)\n", paths.MigratedDir, err)
			return exitDegraded
		}
		from = dirs[len(dirs)-1]
	}
	r, err := migration.Restore(from, overlay.LowerInUse)
	if r != nil {
		logResult("restored", migration.Restored, from, r)
		out.result(r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
		return exitDegraded
	}
	if err := reloadProfiles(); err != nil {
		fmt.Fprintf(stderr, "nm-overlay: the profiles are back, but NetworkManager did not reload them (nmcli connection reload): %v\n", err)
		return exitDegraded
	}
	if !r.Done(migration.Restored) {
		fmt.Fprintln(stderr, "nm-overlay: some profiles were left where they are (see above)")
		return exitDegraded
	}
	return exitOK
}

// reloadProfiles has NetworkManager, when it runs, read its keyfile dir again, so that the
// profiles put back are its own at once (it does not watch the dir).
func reloadProfiles() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nm, err := nmdbus.ConnectIfRunning(ctx)
	if err != nil || nm == nil {
		return err
	}
	defer nm.Close()
	var ok bool
	if err := nm.Call(ctx, nmdbus.SettingsPath, nmdbus.SettingsIface+".ReloadConnections").Store(&ok); err != nil {
		return err
	}
	if !ok {
		return errors.New("ReloadConnections reported a failure")
	}
	return nil
}

// logResult tells the journal what a move or a restore did: a warning when a profile did
// not reach want.
func logResult(verb string, want migration.Outcome, backup string, r *migration.Result) {
	n := 0
	for _, o := range r.Outcomes {
		if o == want {
			n++
		}
	}
	prio := journal.PriNotice
	if !r.Done(want) {
		prio = journal.PriWarning
	}
	log(prio, fmt.Sprintf("migration: %s %d of %d profiles (%s, backup %s)", verb, n, len(r.Outcomes), r.Plan.Lower, backup),
		map[string]string{"NMOVERLAY_MIGRATION": verb})
}

func (p printer) result(r *migration.Result) {
	if p.json {
		p.encode(r)
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tINTERFACE\tPOLICIES\tOUTCOME")
	for _, e := range r.Plan.Move {
		if o, ok := r.Outcomes[e.File]; ok {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.File, dash(e.Interface), strings.Join(e.Policies, ","), o)
		}
	}
	tw.Flush()
}
