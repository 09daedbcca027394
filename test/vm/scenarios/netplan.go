package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/netplan"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// netplanScenarios: the netplan backend on the guest's kernel and Debian's netplan.io, as
// the handler drives it: a bond of B and C in active-backup, a change to it that does not
// converge rolled back, and the policy gone (an empty configuration) taking the bond away.
var netplanScenarios = []Scenario{
	{"a bond of two NICs through the netplan backend, a change rolled back, the bond gone with its policy", func(ctx context.Context, e *Env) error {
		// The engine's scenarios left their profiles on B and C: pruned, as a handler
		// switched to another backend would find the node after a reboot.
		tx, err := e.NM.Apply(ctx, state.State{}, networkmanager.ApplyOptions{Prune: true})
		if err != nil {
			return fmt.Errorf("pruning the engine's profiles: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		b := &netplan.Backend{NM: e.NM, Host: netplan.NewHost("/", paths.DefaultLayout().NetplanScratch())}
		bond := func(mtu string) string {
			return strings.NewReplacer("{B}", e.NICs.B, "{C}", e.NICs.C, "{MTU}", mtu).Replace(`
network:
  version: 2
  ethernets:
    {B}: {}
    {C}: {}
  bonds:
    bond-np:
      interfaces: [{B}, {C}]
      parameters: {mode: active-backup, mii-monitor-interval: 100}
      addresses: [192.0.2.50/24]
      mtu: {MTU}
`)
		}
		if err := applyNetplan(ctx, b, bond("1500")); err != nil {
			return err
		}
		if err := expect([]string{"cat", "/proc/net/bonding/bond-np"}, "fault-tolerance (active-backup)",
			"Slave Interface: "+e.NICs.B, "Slave Interface: "+e.NICs.C, "MII Polling Interval (ms): 100"); err != nil {
			return err
		}
		if err := expect([]string{"ip", "addr", "show", "bond-np"}, "192.0.2.50/24", "mtu 1500"); err != nil {
			return err
		}
		// virtio-net takes at most 65535: NetworkManager activates the bond anyway, and
		// the verification finds the MTU it could not set.
		err = applyNetplan(ctx, b, bond("70000"))
		var ae *backend.ApplyError
		if !errors.As(err, &ae) || ae.RollbackErr != nil || !strings.Contains(ae.Reason, "bond-np.mtu") {
			return fmt.Errorf("a bond MTU of 70000: %v, want it rolled back naming bond-np.mtu", err)
		}
		// NetworkManager's rollback returns once it has started activating the restored
		// profiles again.
		if err := eventually(10*time.Second, func() error {
			return expect([]string{"ip", "addr", "show", "bond-np"}, "192.0.2.50/24", "mtu 1500")
		}); err != nil {
			return fmt.Errorf("after the rollback: %w", err)
		}
		file, err := os.ReadFile(filepath.Join(netplan.RunDir, netplan.FilePrefix+"bond.yaml"))
		if err != nil || !strings.Contains(string(file), "mtu: 1500") {
			return fmt.Errorf("the rollback put the previous file back: %v\n%s", err, file)
		}
		if err := applyNetplan(ctx, b); err != nil {
			return err
		}
		if err := eventually(10*time.Second, func() error {
			if out, err := sh("ip", "link", "show", "bond-np"); err == nil {
				return fmt.Errorf("bond-np outlived its policy:\n%s", out)
			}
			return nil
		}); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(netplan.RunDir, netplan.FilePrefix+"bond.yaml")); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the policy's file outlived it: %v", err)
		}
		return expect([]string{"ip", "link", "show", e.NICs.B}, e.NICs.B)
	}},
}

// applyNetplan applies the documents (none: every policy gone) as the handler does, as
// policy "bond", and commits.
func applyNetplan(ctx context.Context, b *netplan.Backend, docs ...string) error {
	var parsed []backend.Parsed
	for _, doc := range docs {
		s, err := b.Parse([]byte(doc))
		if err != nil {
			return err
		}
		parsed = append(parsed, backend.Parsed{Policy: "bond", State: s})
	}
	desired, _, err := b.Merge(parsed)
	if err != nil {
		return err
	}
	tx, err := b.Apply(ctx, desired)
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}
