package nmhost

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// OVS gives a node Open vSwitch: Debian's ovsdb-server and ovs-vswitchd on the userspace
// datapath (this kernel has no openvswitch module; the netdev datapath needs only tun),
// and NetworkManager with its OVS plugin, built by hack/nm-ovs.sh.
type OVS struct {
	// NetworkManagerDir is hack/nm-ovs.sh's output: the daemon, and plugins/ holding only
	// the OVS device plugin.
	NetworkManagerDir string
}

// Open vSwitch's paths on Debian, inside the node.
const (
	ovsRunDir = "/run/openvswitch"
	ovsEtcDir = "/etc/openvswitch" // conf.db: persistent, as on a host
	// OVSDBSocket is where ovsdb-server listens, Debian's default.
	OVSDBSocket = ovsRunDir + "/db.sock"
	// VSwitchdControl is ovs-vswitchd's control socket, for ovs-appctl -t.
	VSwitchdControl = ovsRunDir + "/ovs-vswitchd.ctl"
	// nmPluginDir is where the daemon looks for its device plugins (Debian's build options).
	nmPluginDir = "/usr/lib/x86_64-linux-gnu/NetworkManager"
	// ovsUserspaceConf: the netdev datapath makes OVS internal interfaces taps; without this
	// NetworkManager adopts the tap with a profile of its own, and a rollback leaves an
	// interface stuck connecting (TEST-RECIPES §10). A test environment's quirk, not
	// nmoverlay's configuration: it sits in the system conf dir.
	ovsUserspaceConf = "[keyfile]\nunmanaged-devices=type:tun\n"
)

// ovsDir holds the node's persistent Open vSwitch database and the daemons' logs.
func (n *Node) ovsDir() string { return filepath.Join(n.Dir, "ovs") }

// ovsMounts are the Boot script's lines for OVS: the plugin dir bound over the daemon's,
// the persistent database dir, the run dir.
func (n *Node) ovsMounts() ([]string, error) {
	if n.OVS == nil {
		return nil, nil
	}
	dirs, err := filepath.Glob(filepath.Join(nmPluginDir, "1.*"))
	if err != nil || len(dirs) != 1 {
		return nil, fmt.Errorf("NetworkManager's plugin dir under %s: %v %v", nmPluginDir, dirs, err)
	}
	if err := os.MkdirAll(n.ovsDir(), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(n.Dir, "syscfg", "00-ovs-userspace-datapath.conf"), []byte(ovsUserspaceConf), 0o644); err != nil {
		return nil, err
	}
	return []string{
		"mount --bind " + filepath.Join(n.OVS.NetworkManagerDir, "plugins") + " " + dirs[0],
		"mkdir -p " + ovsEtcDir + " " + ovsRunDir,
		"mount --bind " + n.ovsDir() + " " + ovsEtcDir,
	}, nil
}

// startOVS starts ovsdb-server on the node's database (created at its first boot) and
// ovs-vswitchd, as openvswitch-switch.service does, before NetworkManager.
func (n *Node) startOVS(ctx context.Context) error {
	if n.OVS == nil {
		return nil
	}
	db := ovsEtcDir + "/conf.db"
	if _, err := os.Stat(filepath.Join(n.ovsDir(), "conf.db")); os.IsNotExist(err) {
		if _, err := n.Run(ctx, "ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema"); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"ovsdb-server", db, "--remote=punix:" + OVSDBSocket, "--pidfile=" + ovsRunDir + "/ovsdb-server.pid", "--detach",
			"--log-file=" + filepath.Join(n.ovsDir(), "ovsdb-server.log"), "--unixctl=" + ovsRunDir + "/ovsdb-server.ctl"},
		{"ovs-vsctl", "--no-wait", "init"},
		{"ovs-vswitchd", "unix:" + OVSDBSocket, "--pidfile=" + ovsRunDir + "/ovs-vswitchd.pid", "--detach",
			"--log-file=" + filepath.Join(n.ovsDir(), "ovs-vswitchd.log"), "--unixctl=" + VSwitchdControl},
	} {
		if _, err := n.Run(ctx, args[0], args[1:]...); err != nil {
			return fmt.Errorf("starting Open vSwitch: %w", err)
		}
	}
	return nil
}

// stopOVS stops the daemons as the node goes down; the database stays.
func (n *Node) stopOVS() {
	if n.OVS == nil || n.holder == nil {
		return
	}
	for _, daemon := range []string{"ovs-vswitchd", "ovsdb-server"} {
		_, _ = n.Run(context.Background(), "ovs-appctl", "-t", ovsRunDir+"/"+daemon+".ctl", "exit")
	}
}

// nmBinary is the NetworkManager the node runs: the one built with OVS when the node has it.
func (n *Node) nmBinary() string {
	if n.OVS != nil {
		return filepath.Join(n.OVS.NetworkManagerDir, "NetworkManager")
	}
	return "NetworkManager"
}
