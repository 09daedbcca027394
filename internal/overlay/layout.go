package overlay

import (
	"fmt"
	"os"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// LoadLayout reads a layout file; a missing file means the default layout.
func LoadLayout(path string) (paths.Layout, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return paths.DefaultLayout(), nil
	}
	if err != nil {
		return paths.DefaultLayout(), err
	}
	l, err := paths.ParseLayout(b)
	if err != nil {
		return l, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}
