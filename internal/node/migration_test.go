package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/migration"
)

// TestMigrationStatus: the NodeNetworkState shows the plan while there is one, and what
// the move did, read from the files nm-overlay keeps on the node.
func TestMigrationStatus(t *testing.T) {
	dir := t.TempDir()
	lower := filepath.Join(dir, "system-connections")
	planPath := filepath.Join(dir, "migration", "plan.json")
	migrated := filepath.Join(dir, "migrated")
	if st, err := MigrationStatus(planPath, migrated); st != nil || err != nil {
		t.Fatalf("nothing on the node: %+v, %v", st, err)
	}
	if err := os.MkdirAll(lower, 0o755); err != nil {
		t.Fatal(err)
	}
	content := "[connection]\nid=br7\ntype=bridge\ninterface-name=br7\n"
	if err := os.WriteFile(filepath.Join(lower, "br7.nmconnection"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ps, err := migration.ReadProfiles(lower)
	if err != nil || len(ps) != 1 {
		t.Fatal(ps, err)
	}
	plan := migration.PlanFile{Lower: lower, Made: time.Now(), Plan: migration.Plan{
		Move: []migration.Entry{{Profile: ps[0], Policies: []string{"bridge"}}},
		Stay: []migration.Entry{{Profile: migration.Profile{File: "persist0.nmconnection", Interface: "eth0"}, Why: "no policy in force names eth0"}}}}
	if err := migration.WritePlan(planPath, plan); err != nil {
		t.Fatal(err)
	}
	st, err := MigrationStatus(planPath, migrated)
	if err != nil || st == nil || len(st.Move) != 1 || st.Move[0].File != "br7.nmconnection" || st.Move[0].Policies[0] != "bridge" ||
		len(st.Stay) != 1 || st.Stay[0].Detail != "no policy in force names eth0" || st.Moved != nil {
		t.Fatalf("planned: %+v, %v", st, err)
	}
	backup := filepath.Join(migrated, "boot-1")
	if _, err := migration.Move(planPath, backup, func(string) (bool, error) { return false, nil }); err != nil {
		t.Fatal(err)
	}
	st, err = MigrationStatus(planPath, migrated)
	if err != nil || st == nil || st.Move != nil || st.Backup != backup || len(st.Moved) != 1 ||
		st.Moved[0].File != "br7.nmconnection" || st.Moved[0].Detail != string(migration.Moved) {
		t.Fatalf("moved: %+v, %v", st, err)
	}
}
