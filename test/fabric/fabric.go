// Package fabric is the test network between nodes and the API server: a network
// namespace holding the nodes' gateway, where the API server is served, so a node reaches
// the API server only through its own interface (a policy that cuts it off, cuts it off).
package fabric

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Gateway is the nodes' gateway in the fabric; the API server is at APIAddr.
const (
	Gateway = "192.0.2.254"
	APIPort = "6443"
	APIAddr = Gateway + ":" + APIPort
)

// InNetNS runs fn on a thread that joined the network namespace at path; the thread is
// thrown away afterwards (never unlocked), so no other goroutine runs there. Sockets made
// in fn stay in that namespace.
func InNetNS(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// ServeAPI makes the API server (apiServer, a URL on this host's loopback) reachable at
// APIAddr inside the fabric netns only: the listening socket is made in the fabric, the
// connections to the API server here.
func ServeAPI(fabricNetNS, apiServer string) (stop func(), err error) {
	return ServeAPIOn(fabricNetNS, apiServer, APIPort)
}

// ServeAPIOn is ServeAPI on another port of the fabric's addresses.
func ServeAPIOn(fabricNetNS, apiServer, port string) (stop func(), err error) {
	u, err := url.Parse(apiServer)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	err = InNetNS("/var/run/netns/"+fabricNetNS, func() error {
		var err error
		// Every address of the fabric: a gateway re-cabled at a node's reboot keeps it.
		ln, err = net.Listen("tcp", ":"+port)
		return err
	})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			track(in)
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				track(out)
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}, nil
}

// Kubeconfig writes a kubeconfig for a handler that reaches the API server across the
// fabric as user, a member of system:masters (a client certificate).
func Kubeconfig(env *envtest.Environment, user, path string) error {
	u, err := env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	cfg := u.Config()
	return WriteKubeconfig(path, "https://"+APIAddr, cfg.CAData,
		&clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData})
}

// WriteKubeconfig writes a kubeconfig for server with the given credentials (a client
// certificate or a token). The serving certificate names localhost, whatever the address.
func WriteKubeconfig(path, server string, caData []byte, auth *clientcmdapi.AuthInfo) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["nmoverlay"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData, TLSServerName: "localhost"}
	kc.AuthInfos["nmoverlay"] = auth
	kc.Contexts["nmoverlay"] = &clientcmdapi.Context{Cluster: "nmoverlay", AuthInfo: "nmoverlay"}
	kc.CurrentContext = "nmoverlay"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
