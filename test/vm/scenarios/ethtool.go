package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// ethtoolScenarios: offload features of the guest's virtio NIC, by their kernel names
// through NetworkManager's ethtool setting, checked with ethtool -k and read back by Show.
// This qemu's virtio NIC offers no checksum, scatter-gather or TSO offload (ethtool -k:
// "off [fixed]"): of the features it can change, GRO and tx-nocache-copy; a policy
// asking TSO of it does not converge and is rolled back, saying which feature.
var ethtoolScenarios = []Scenario{
	{"ethtool offload features on a virtio NIC, and one it cannot do refused", func(ctx context.Context, e *Env) error {
		features := func(f string) string {
			return `
interfaces:
- name: {A}
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
  ethtool:
    feature: ` + f + `
`
		}
		if err := e.Apply(ctx, features("{rx-gro: false, tx-nocache-copy: true}")); err != nil {
			return err
		}
		if err := expect([]string{"ethtool", "-k", e.NICs.A}, "generic-receive-offload: off", "tx-nocache-copy: on"); err != nil {
			return err
		}
		s, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(s.Interfaces, func(it state.Interface) bool { return it.Name == e.NICs.A })
		if i < 0 || s.Interfaces[i].Ethtool == nil || len(s.Interfaces[i].Ethtool.Feature) != 2 ||
			s.Interfaces[i].Ethtool.Feature["rx-gro"] || !s.Interfaces[i].Ethtool.Feature["tx-nocache-copy"] {
			return fmt.Errorf("Show: %s ethtool %+v", e.NICs.A, s.Interfaces[i].Ethtool)
		}
		// The features follow the policy both ways.
		if err := e.Apply(ctx, features("{rx-gro: true, tx-nocache-copy: false}")); err != nil {
			return err
		}
		if err := expect([]string{"ethtool", "-k", e.NICs.A}, "generic-receive-offload: on", "tx-nocache-copy: off"); err != nil {
			return err
		}
		// TSO, fixed off on this NIC: not converged, rolled back, named.
		err = e.Apply(ctx, features("{rx-gro: false, tx-tcp-segmentation: true}"))
		if err == nil || !strings.Contains(err.Error(), "ethtool.feature.tx-tcp-segmentation: false, want true") || !strings.Contains(err.Error(), "rolled back") {
			return fmt.Errorf("want TSO refused by verification and rolled back, got %v", err)
		}
		// NetworkManager activates the restored profile after the rollback returns.
		return eventually(10*time.Second, func() error {
			return expect([]string{"ethtool", "-k", e.NICs.A}, "generic-receive-offload: on")
		})
	}},
}
