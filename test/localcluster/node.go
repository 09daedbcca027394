package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/nspawn"
)

// Where a node keeps what the local cluster gives it.
const (
	kubeDir      = "/etc/kubernetes"
	imagesDir    = "/var/lib/localcluster/images"
	kubeletBin   = "/usr/local/bin/kubelet"
	kubeProxyBin = "/usr/local/bin/kube-proxy"
	// KubeletUnit runs the node's kubelet.
	KubeletUnit = "kubelet.service"
)

// kubeletPrepUnit gives the kubelet what nspawn holds back, once per boot: the cgroup
// controllers read-write (nspawn mounts them read-only), and the kernel settings the
// kubelet insists on, read from files bound over them (they are not namespaced: the
// host's are never changed).
const kubeletPrepUnit = `[Unit]
Description=what the kubelet needs of an nspawn node
DefaultDependencies=no
After=local-fs.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -ec 'for d in /sys/fs/cgroup/*/; do case "$d" in */systemd/|*/unified/) ;; *) mount -o remount,bind,rw "$d" ;; esac; done'
ExecStart=/bin/sh -ec 'mkdir -p /run/localcluster/sysctl; cd /run/localcluster/sysctl; echo 1 > overcommit_memory; echo 10 > panic; echo 1 > panic_on_oops; mount --bind overcommit_memory /proc/sys/vm/overcommit_memory; mount --bind panic /proc/sys/kernel/panic; mount --bind panic_on_oops /proc/sys/kernel/panic_on_oops'
`

const kubeletUnit = `[Unit]
Description=kubelet
Wants=containerd.service network-online.target
Requires=kubelet-prep.service
After=containerd.service network-online.target kubelet-prep.service

[Service]
ExecStart=` + kubeletBin + ` --config=` + kubeDir + `/kubelet.yaml --kubeconfig=` + kubeDir + `/kubelet.kubeconfig --hostname-override=%s --node-ip=%s
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`

const kubeProxyUnit = `[Unit]
Description=kube-proxy
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=` + kubeProxyBin + ` --config=` + kubeDir + `/kube-proxy.yaml
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`

// kubeletConfig: cgroup v1 (this host's), cgroupfs as containerd's runc is configured, and
// thresholds loose enough for a test machine's disk.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
clusterDomain: cluster.local
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`

const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ` + kubeDir + `/kube-proxy.kubeconfig
hostnameOverride: %s
mode: iptables
clusterCIDR: ` + podCIDR + `
# the conntrack table is the host's: leave it as it is
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`

// containerdConfig: runc may not lower oom_score_adj (the host's bounding set lacks
// CAP_SYS_RESOURCE), and the sandbox image is the one imported from imagesDir. runc
// keeps its default cgroupfs driver, as the kubelet's.
const containerdConfig = `version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%s"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
`

// cniConfig is the pods' network: a bridge with the node's /24, masqueraded out of the
// node.
const cniConfig = `{"cniVersion":"1.0.0","name":"localcluster","plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":true,
 "ipam":{"type":"host-local","ranges":[[{"subnet":"%s"}]],"routes":[{"dst":"0.0.0.0/0"}]}}]}
`

// nicsConfig: NetworkManager manages the node's NICs and leaves alone the far end of the
// second NIC's cable and the pods' bridge and veths (the CNI plugin's).
const nicsConfig = "[device-localcluster-nics]\nmatch-device=interface-name:" + Uplink + ";interface-name:" + SecondNIC + "\nmanaged=1\n\n" +
	"[device-localcluster-cable]\nmatch-device=interface-name:" + SecondNIC + "p\nmanaged=0\n\n" +
	"[device-localcluster-pods]\nmatch-device=interface-name:cni0;interface-name:veth*\nmanaged=0\n"

// addNode prepares a node's root as the installer leaves it (its NICs' persistent
// profiles, a container runtime and a kubelet), boots it, imports the images, and waits
// until its kubelet has it Ready.
func (c *Cluster) addNode(ctx context.Context, env *envtest.Environment, o Options, name string, i int) (*Node, error) {
	m, err := nspawn.New(o.Rootfs, name)
	if err != nil {
		return nil, err
	}
	n := &Node{Machine: m, Name: name, Address: fmt.Sprintf("192.0.2.%d", 11+i),
		SecondNICAddress: fmt.Sprintf("198.51.100.%d", 11+i), fabricPeer: fmt.Sprintf("nmo-gw%d-%d", i, os.Getpid()%10000)}
	// nspawn moves the uplink back to the host when the machine stops: delete it after.
	c.onClose(func() { _ = exec.Command("ip", "link", "del", Uplink).Run() })
	c.onClose(m.Close)
	c.markers = append(c.markers, m.Root)

	// containerd's snapshots cannot live on the machine's overlay root: a plain dir.
	containerd := filepath.Join(c.dir, name, "containerd")
	if err := os.MkdirAll(containerd, 0o700); err != nil {
		return nil, err
	}
	m.Interfaces = []string{Uplink}
	m.BeforeBoot = n.cable(c.fabric)
	m.PrivateCgroup = true
	m.Args = []string{"--capability=all", "--system-call-filter=@keyring bpf", "--bind=/dev/kmsg",
		"--bind=" + containerd + ":/var/lib/containerd", "--bind-ro=" + o.Images + ":" + imagesDir,
		"--bind-ro=" + filepath.Join(o.Kube, "kubelet") + ":" + kubeletBin,
		"--bind-ro=" + filepath.Join(o.Kube, "kube-proxy") + ":" + kubeProxyBin}

	api := "https://" + fabric.APIAddr
	if err := c.userKubeconfig(env, envtest.User{Name: "system:node:" + name, Groups: []string{"system:nodes"}}, api,
		filepath.Join(m.Root, kubeDir, "kubelet.kubeconfig")); err != nil {
		return nil, err
	}
	if err := c.userKubeconfig(env, envtest.User{Name: "system:kube-proxy"}, api, filepath.Join(m.Root, kubeDir, "kube-proxy.kubeconfig")); err != nil {
		return nil, err
	}
	uuid := func(k int) string { return fmt.Sprintf("5a1b2c3d-%04x-4e5f-8a9b-%012x", i, k) }
	files := []struct {
		path, content string
		mode          os.FileMode
	}{
		// What the installer left: the persistent profiles of the node's NICs.
		{filepath.Join(paths.NMDefaultKeyfile, Uplink+".nmconnection"), profile(Uplink+"-persistent", uuid(1), Uplink, n.Address+"/24", fabric.Gateway), 0o600},
		{filepath.Join(paths.NMDefaultKeyfile, SecondNIC+".nmconnection"), profile(SecondNIC+"-persistent", uuid(2), SecondNIC, n.SecondNICAddress+"/24", ""), 0o600},
		// The hardware: NetworkManager leaves veth devices to whoever made them (its udev
		// rules); these stand in for real NICs.
		{"/etc/systemd/system/second-nic.service", secondNICUnit, 0o644},
		{"/etc/NetworkManager/conf.d/50-localcluster-nics.conf", nicsConfig, 0o644},
		{"/etc/hostname", name + "\n", 0o644},
		// Nothing outside the fabric is reachable: no name server to ask.
		{"/etc/resolv.conf", "# the local cluster has no DNS\n", 0o644},
		// The node's Kubernetes: containerd, its CNI network, the kubelet, kube-proxy.
		{"/etc/containerd/config.toml", fmt.Sprintf(containerdConfig, c.images[len(c.images)-1]), 0o644},
		{"/etc/cni/net.d/10-localcluster.conflist", fmt.Sprintf(cniConfig, nodePodCIDR(i)), 0o644},
		{kubeDir + "/kubelet.yaml", kubeletConfig, 0o644},
		{kubeDir + "/kube-proxy.yaml", fmt.Sprintf(kubeProxyConfig, name), 0o644},
		{"/etc/systemd/system/kubelet-prep.service", kubeletPrepUnit, 0o644},
		{"/etc/systemd/system/" + KubeletUnit, fmt.Sprintf(kubeletUnit, name, n.Address), 0o644},
		{"/etc/systemd/system/kube-proxy.service", kubeProxyUnit, 0o644},
	}
	for _, f := range files {
		if err := n.WriteFile(f.path, f.content, f.mode); err != nil {
			return nil, err
		}
	}
	for link, target := range map[string]string{
		"/etc/systemd/system/NetworkManager.service.wants/second-nic.service":      "/etc/systemd/system/second-nic.service",
		"/etc/systemd/system/multi-user.target.wants/" + KubeletUnit:               "/etc/systemd/system/" + KubeletUnit,
		"/etc/systemd/system/multi-user.target.wants/kube-proxy.service":           "/etc/systemd/system/kube-proxy.service",
		"/etc/systemd/system/multi-user.target.wants/localcluster-boot-id.service": "/etc/systemd/system/localcluster-boot-id.service",
	} {
		p := filepath.Join(m.Root, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(target, p); err != nil {
			return nil, err
		}
	}
	// The node's role is the administrator's to give (NodeRestriction keeps a kubelet from
	// labelling itself node-role.kubernetes.io/*): the Node is made here, and the kubelet
	// registers into it.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""}}}
	if err := c.Client.Create(ctx, node); err != nil {
		return nil, err
	}
	if err := m.Boot(ctx); err != nil {
		return nil, err
	}
	if err := n.importImages(ctx, c.images); err != nil {
		return nil, err
	}
	return n, c.WaitReady(ctx, n)
}

// importImages puts the images into the node's containerd (once: its store outlives reboots).
func (n *Node) importImages(ctx context.Context, images []string) error {
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := n.Exec(ctx, "ctr", "version")
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("containerd did not answer: %w", err)
	}
	for _, ref := range images {
		archive := filepath.Join(imagesDir, archiveName(ref))
		if _, err := n.Exec(ctx, "ctr", "-n", "k8s.io", "images", "import", archive); err != nil {
			return fmt.Errorf("importing %s: %w", ref, err)
		}
	}
	return nil
}

// archiveName is the file hack/node-images.sh writes an image to: its repository's last
// element.
func archiveName(ref string) string {
	name := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.Index(name, ":"); i >= 0 {
		name = name[:i]
	}
	return name + ".tar"
}

// WaitReady waits until the node's kubelet reports it Ready in its current boot.
func (c *Cluster) WaitReady(ctx context.Context, n *Node) error {
	boot, err := n.BootID(ctx)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
				return cond.Status == corev1.ConditionTrue && node.Status.NodeInfo.BootID == boot, nil
			}
		}
		return false, nil
	})
	if err != nil {
		journal, _ := n.Run(ctx, "journalctl", "-b", "-u", KubeletUnit, "--no-pager", "-n", "30")
		return fmt.Errorf("%s not Ready in boot %s (last: %s): %w\n%s", n.Name, boot, last, err, journal)
	}
	return nil
}

// ImportImage puts the image in a docker archive (as hack/node-images.sh writes them) into
// the node's containerd: an image besides those every node imports at its start, e.g. an
// earlier version of nmoverlay's.
func (n *Node) ImportImage(ctx context.Context, archive string) error {
	const inNode = "/var/tmp/import.tar"
	b, err := os.ReadFile(archive)
	if err != nil {
		return err
	}
	if err := n.WriteFile(inNode, string(b), 0o600); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(n.Root, inNode))
	if _, err := n.Exec(ctx, "ctr", "-n", "k8s.io", "images", "import", inNode); err != nil {
		return fmt.Errorf("%s: importing %s: %w", n.Name, archive, err)
	}
	return nil
}
