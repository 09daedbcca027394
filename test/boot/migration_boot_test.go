//go:build boot

package boot_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/migration"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/nspawn"
)

// nmstateProfiles are what kubernetes-nmstate's handler leaves in the persistent dir for
// a policy with a bridge over a dummy port and a dummy of its own, as nmstate writes them
// through NetworkManager (id = interface name, the port's controller by name).
var nmstateProfiles = map[string]string{
	"br7.nmconnection": `[connection]
id=br7
uuid=7a1b2c3d-0000-4000-8000-000000000007
type=bridge
interface-name=br7
autoconnect-slaves=1

[bridge]
stp=false

[ipv4]
address1=198.51.100.7/24
method=manual

[ipv6]
method=disabled
`,
	"dummy8.nmconnection": `[connection]
id=dummy8
uuid=7a1b2c3d-0000-4000-8000-000000000008
type=dummy
interface-name=dummy8
master=br7
slave-type=bridge
`,
	"dummy9.nmconnection": `[connection]
id=dummy9
uuid=7a1b2c3d-0000-4000-8000-000000000009
type=dummy
interface-name=dummy9

[ipv4]
address1=203.0.113.9/24
method=manual

[ipv6]
method=disabled
`,
}

// nmstatePolicies are the policies in force that wrote them.
var nmstatePolicies = map[string]string{
	"bridge": `interfaces:
- {name: br7, type: linux-bridge, state: up, ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]},
   bridge: {options: {stp: {enabled: false}}, port: [{name: dummy8}]}}
- {name: dummy8, type: dummy, state: up}`,
	"dummy": `interfaces: [{name: dummy9, type: dummy, state: up, ipv4: {enabled: true, address: [{ip: 203.0.113.9, prefix-length: 24}]}}]`,
}

// A node that ran kubernetes-nmstate: its policies' profiles in the persistent dir. The
// handler's plan (here made by the same code from the same policies) lists them; at the
// first boot on the overlay nm-overlay moves them out before the overlay is mounted, so
// NetworkManager never loads them; a restore, once the MachineConfig is gone, puts back
// the original files byte for byte.
var _ = Describe("a node moved from kubernetes-nmstate", Ordered, func() {
	var (
		m        *nspawn.Machine
		ctx      = context.Background()
		lower    string // the persistent dir, from the host
		original map[string]string
		before   []string // /etc before the first boot on the overlay
	)

	BeforeAll(func() {
		m = newNode("migrate")
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
		Expect(m.Poweroff(ctx)).To(Succeed())
		lower = filepath.Join(m.Root, layout.Lower)
		for name, content := range nmstateProfiles {
			writeFile(m, filepath.Join(layout.Lower, name), content, 0o600)
		}
		original = dirContents(lower)

		profiles, err := migration.ReadProfiles(lower)
		Expect(err).NotTo(HaveOccurred())
		var sources []state.Source
		for name, doc := range nmstatePolicies {
			s, err := state.Parse([]byte(doc))
			Expect(err).NotTo(HaveOccurred())
			sources = append(sources, state.Source{Policy: name, State: s})
		}
		plan := networkmanager.PersistentPlan(profiles, sources, map[string]string{"veth0": "veth0 holds the node's InternalIP"})
		Expect(plan.Move).To(HaveLen(3))
		Expect(plan.Stay).To(ConsistOf(HaveField("Profile.File", "persist0.nmconnection")))
		Expect(migration.WritePlan(filepath.Join(m.Root, paths.MigrationPlan), migration.PlanFile{Lower: layout.Lower, Made: time.Now(), Plan: plan})).To(Succeed())

		applyMachineConfig(m, true)
		before = tree(m.Root, "etc")
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
	})

	It("moves the planned profiles out of the persistent dir before the overlay is mounted", func() {
		Expect(unitProp(m, paths.MigrateService, "ConditionResult")).To(Equal("yes"))
		Expect(unitProp(m, paths.MigrateService, "Result")).To(Equal("success"))
		Expect(monotonic(m, paths.MigrateService, "ActiveEnterTimestampMonotonic")).
			To(BeNumerically("<", monotonic(m, layout.MountUnit(), "ActiveEnterTimestampMonotonic")))
		Expect(dirContents(lower)).To(Equal(map[string]string{"persist0.nmconnection": original["persist0.nmconnection"]}))
		Expect(tree(m.Root, "etc")).To(Equal(without(before, "br7.nmconnection", "dummy8.nmconnection", "dummy9.nmconnection")),
			"nothing else in /etc changed")
		boot := run(m, "cat", paths.KernelBootIDFile)
		kept := dirContents(filepath.Join(m.Root, paths.MigratedDir, boot, "profiles"))
		for name := range nmstateProfiles {
			Expect(kept).To(HaveKeyWithValue(name, original[name]), "the backup of %s", name)
		}
		_, err := os.Stat(filepath.Join(m.Root, paths.MigrationPlan))
		Expect(os.IsNotExist(err)).To(BeTrue(), "the plan is consumed")
		Expect(run(m, "journalctl", "-o", "cat", "NMOVERLAY_MIGRATION=moved")).To(ContainSubstring("moved 3 of 3 profiles"))
	})

	It("runs NetworkManager on the overlay without them", func() {
		names := run(m, "nmcli", "-g", "NAME", "connection", "show")
		Expect(names).To(ContainSubstring("persist0"))
		Expect(names).NotTo(ContainSubstring("br7"))
		Expect(names).NotTo(ContainSubstring("dummy9"))
		waitForAddress(m, "veth0", "192.0.2.10/24")
		r := verifyReport(m)
		Expect(r.OK).To(BeTrue(), "%+v", r.Failed())
	})

	It("does nothing at the next boot, and refuses to restore under the mounted overlay", func() {
		Expect(m.Reboot(ctx)).To(Succeed(), m.Console())
		Expect(unitProp(m, paths.MigrateService, "ConditionResult")).To(Equal("no"))
		Expect(dirContents(lower)).To(HaveLen(1))
		_, err := m.Exec(ctx, paths.HelperBinary, "restore-profiles")
		Expect(err).To(MatchError(ContainSubstring("the overlay is mounted on " + layout.Lower)))
		Expect(dirContents(lower)).To(HaveLen(1))
	})

	It("restores the original files byte for byte once the MachineConfig is removed", func() {
		Expect(m.Poweroff(ctx)).To(Succeed())
		Expect(machineconfigs.RemoveFromRoot(m.Root, mcOpts)).To(Succeed())
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
		out, err := m.Exec(ctx, paths.HelperBinary, "restore-profiles", "-o", "json")
		Expect(err).NotTo(HaveOccurred(), out)
		var r migration.Result
		Expect(json.Unmarshal([]byte(out), &r)).To(Succeed(), out)
		Expect(r.Outcomes).To(Equal(map[string]migration.Outcome{
			"br7.nmconnection": migration.Restored, "dummy8.nmconnection": migration.Restored, "dummy9.nmconnection": migration.Restored}))
		Expect(dirContents(lower)).To(Equal(original))
		run(m, "nmcli", "connection", "reload")
		Expect(run(m, "nmcli", "-g", "NAME", "connection", "show")).To(ContainSubstring("dummy9"))
		Expect(m.Poweroff(ctx)).To(Succeed())
	})
})

// dirContents is every file of dir: name -> mode and content.
func dirContents(dir string) map[string]string {
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		Expect(err).NotTo(HaveOccurred())
		info, err := e.Info()
		Expect(err).NotTo(HaveOccurred())
		out[e.Name()] = info.Mode().String() + " " + string(b)
	}
	return out
}

// without is paths less those whose base name is one of names.
func without(paths []string, names ...string) []string {
	var out []string
	for _, p := range paths {
		keep := true
		for _, n := range names {
			if strings.HasSuffix(p, "/"+n) {
				keep = false
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}
