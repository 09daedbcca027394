package overlay

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// WatchLower signals (one value per burst, never blocking) when anything in the lower dir
// changes: nothing else would tell the handler that someone wrote into it while the overlay
// is mounted. The channel closes when ctx ends.
func WatchLower(ctx context.Context, l paths.Layout) (<-chan struct{}, error) {
	return watchDir(ctx, l.Lower, nil)
}

// WatchMarker signals, like WatchLower, when the degraded marker is written or removed:
// `nm-overlay enable` moving a running node onto the overlay, or a reset that degraded it.
func WatchMarker(ctx context.Context, l paths.Layout) (<-chan struct{}, error) {
	return watchDir(ctx, l.RunDir, []string{filepath.Base(l.DegradedMarker())})
}

// watchDir signals changes of dir's entries, only of those named when names is not nil.
func watchDir(ctx context.Context, dir string, names []string) (<-chan struct{}, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_MOVED_FROM |
		unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer unix.Close(fd)
		buf := make([]byte, 4096)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for ctx.Err() == nil {
			n, err := unix.Poll(fds, 500) // ms: how soon a cancelled ctx is noticed
			if err != nil && err != unix.EINTR {
				return
			}
			if n <= 0 {
				continue
			}
			n, err = unix.Read(fd, buf)
			if err != nil && err != unix.EAGAIN {
				return
			}
			if names != nil && !namesAny(buf[:max(n, 0)], names) {
				continue
			}
			select {
			case out <- struct{}{}:
			default: // one pending signal stands for the whole burst
			}
		}
	}()
	return out, nil
}

// namesAny says whether any inotify event in buf is about one of names.
func namesAny(buf []byte, names []string) bool {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		end := off + unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			return false
		}
		name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:end], "\x00"))
		if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || slices.Contains(names, name) {
			return true
		}
		off = end
	}
	return false
}
