package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// SnapshotEtcd saves a snapshot of the cluster's etcd to path, as `etcdctl snapshot save`
// does (the Maintenance API's snapshot stream), fsynced.
func (c *Cluster) SnapshotEtcd(ctx context.Context, path string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.env.ControlPlane.Etcd.URL.String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("etcd snapshot: %w", err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return fmt.Errorf("etcd snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// RestoreEtcd restores the cluster's etcd from snapshot as Kubernetes documents it
// ("Restoring an etcd cluster"): the API server stopped, then etcd; the snapshot restored
// into a new data dir with etcdutl, its revision bumped past any a client saw and marked
// compacted, so that every watch and list from before is told to start over instead of
// waiting for revisions that will never come; etcd started on it, then the API server. The
// controllers, kubelets and nmoverlay's pods keep running, as on a cluster whose control
// plane alone is restored.
func (c *Cluster) RestoreEtcd(ctx context.Context, etcdutl, snapshot string) error {
	cp := &c.env.ControlPlane
	// With kubelets and handlers watching, its graceful termination outlasts the control
	// plane's stop timeout (Start) and envtest kills it; envtest says so only in its
	// error's text.
	if err := cp.APIServer.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := cp.Etcd.Stop(); err != nil {
		return fmt.Errorf("stopping etcd: %w", err)
	}
	dataDir, err := os.MkdirTemp(c.dir, "etcd-restored-")
	if err != nil {
		return err
	}
	// etcdutl creates the data dir itself.
	if err := os.Remove(dataDir); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, etcdutl, "snapshot", "restore", snapshot, "--data-dir", dataDir,
		"--bump-revision", "1000000000", "--mark-compacted").CombinedOutput()
	if err != nil {
		return fmt.Errorf("etcdutl snapshot restore: %w: %s", err, out)
	}
	cp.Etcd.DataDir = dataDir
	if err := cp.Etcd.Start(); err != nil {
		return fmt.Errorf("starting etcd on %s: %w", filepath.Base(dataDir), err)
	}
	if err := cp.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	return nil
}
