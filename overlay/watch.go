package overlay

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// WatchLower signals (one value per burst, never blocking) when anything in the lower dir
// changes: nothing else would tell the handler that someone wrote into it while the overlay
// is mounted. The channel closes when ctx ends.
func WatchLower(ctx context.Context, l Layout) (<-chan struct{}, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_MOVED_FROM |
		unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	if _, err := unix.InotifyAddWatch(fd, l.Lower, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watching %s: %w", l.Lower, err)
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
			if _, err := unix.Read(fd, buf); err != nil && err != unix.EAGAIN {
				return
			}
			select {
			case out <- struct{}{}:
			default: // one pending signal stands for the whole burst
			}
		}
	}()
	return out, nil
}
