package localcluster

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/test/fabric"
)

// The cluster's networks: the Services' (the API server's own Service takes the first
// address) and the pods' (each node a /24 of it, in node order).
const (
	serviceCIDR   = "10.0.0.0/24"
	kubernetesSvc = "10.0.0.1"
	podCIDR       = "10.244.0.0/16"
)

func nodePodCIDR(i int) string { return fmt.Sprintf("10.244.%d.0/24", i) }

// pki is what the control plane's TLS rests on. envtest signs the client certificates
// (AddUser); the serving certificate is made here, because a pod reaches the API server
// by the kubernetes Service's address and a node by the fabric's, and envtest's names
// neither.
type pki struct {
	dir                   string
	caFile, saKeyFile     string
	caData                []byte
	servingCert, servingK []byte
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost",
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(fabric.Gateway), net.ParseIP(kubernetesSvc)},
		[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return nil, err
	}
	// The serving certificate, then the CA that signed it.
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil || len(certs) != 2 {
		return nil, fmt.Errorf("serving certificate: %d certificates, %v", len(certs), err)
	}
	caData, err := cert.EncodeCertificates(certs[1])
	if err != nil {
		return nil, err
	}
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, caFile: filepath.Join(dir, "ca.crt"), saKeyFile: filepath.Join(dir, "service-account.key"),
		caData: caData, servingCert: certPEM, servingK: keyPEM}
	for path, data := range map[string][]byte{
		p.caFile: caData, p.saKeyFile: saKey,
		// envtest keeps a CertDir holding apiserver.crt as it is.
		filepath.Join(dir, "apiserver.crt"): certPEM, filepath.Join(dir, "apiserver.key"): keyPEM,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// apiServer configures envtest's kube-apiserver as a cluster's: the Node authorizer and
// NodeRestriction (kubelets act for their own node only), ServiceAccount admission (pods
// get their tokens), the serving certificate above, the service-account signing key the
// controller manager shares, and the fabric's gateway advertised as its address, so the
// kubernetes Service leads there.
func (p *pki) apiServer(assets string) *envtest.APIServer {
	s := &envtest.APIServer{CertDir: p.dir, Path: filepath.Join(assets, "kube-apiserver")}
	s.SecureServing.CA = p.caData
	args := s.Configure()
	args.Set("authorization-mode", "Node,RBAC")
	args.Set("enable-admission-plugins", "NodeRestriction,ServiceAccount")
	args.Disable("disable-admission-plugins")
	args.Set("advertise-address", fabric.Gateway)
	args.Set("service-cluster-ip-range", serviceCIDR)
	args.Set("service-account-key-file", p.saKeyFile)
	args.Set("service-account-signing-key-file", p.saKeyFile)
	args.Set("allow-privileged", "true")
	return s
}

// userKubeconfig writes a kubeconfig for user (a client certificate envtest signs) that
// reaches the API server at server.
func (c *Cluster) userKubeconfig(env *envtest.Environment, user envtest.User, server, path string) error {
	u, err := env.AddUser(user, nil)
	if err != nil {
		return err
	}
	cfg := u.Config()
	return fabric.WriteKubeconfig(path, server, c.pki.caData,
		&clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData})
}

// startControllers runs kube-controller-manager (the DaemonSet, Deployment, ReplicaSet,
// node-lifecycle, service-account and root-CA controllers a cluster has) and
// kube-scheduler next to the API server, each as its own user, as a control-plane node
// runs them.
func (c *Cluster) startControllers(env *envtest.Environment, cfg *rest.Config, assets string, log io.Writer) error {
	kcm := filepath.Join(c.dir, "kube-controller-manager.kubeconfig")
	if err := c.userKubeconfig(env, envtest.User{Name: "system:kube-controller-manager"}, cfg.Host, kcm); err != nil {
		return err
	}
	sched := filepath.Join(c.dir, "kube-scheduler.kubeconfig")
	if err := c.userKubeconfig(env, envtest.User{Name: "system:kube-scheduler"}, cfg.Host, sched); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{"--kubeconfig=" + kcm, "--authentication-kubeconfig=" + kcm, "--authorization-kubeconfig=" + kcm,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(freePort()),
			"--use-service-account-credentials=true", "--service-account-private-key-file=" + c.pki.saKeyFile,
			"--root-ca-file=" + c.pki.caFile, "--cluster-cidr=" + podCIDR, "--service-cluster-ip-range=" + serviceCIDR,
			// A node that stops reporting is NotReady after 40 s (Kubernetes' default
			// before 1.32), not 50; its pods are not evicted for the demo's length. Not
			// less: on a loaded 2-core machine an API server busy with new CRDs has held
			// a kubelet's lease renewals for 20-25 s, and 20 s marked a running node
			// NotReady.
			"--node-monitor-grace-period=40s"}},
		{"kube-scheduler", []string{"--kubeconfig=" + sched, "--authentication-kubeconfig=" + sched, "--authorization-kubeconfig=" + sched,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(freePort())}},
	} {
		if err := c.startProcess(filepath.Join(assets, p.name), p.args, log); err != nil {
			return fmt.Errorf("starting %s: %w", p.name, err)
		}
	}
	return nil
}

// startProcess runs a control-plane component until Close.
func (c *Cluster) startProcess(bin string, args []string, log io.Writer) error {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.onClose(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return nil
}

// freePort is a TCP port on loopback nothing listens on now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
