package ttyready

import (
	"golang.org/x/sys/unix"
)

// The /proc files of a thread a look reads.
const (
	fileStat = iota
	fileSyscall
	fileSchedstat
	nFiles
)

var taskFileNames = [nFiles]string{"stat", "syscall", "schedstat"}

// taskFiles holds a thread's /proc files open, so that looking at the same
// thread again costs one pread per file (the kernel regenerates them at
// offset 0) instead of an open, a read and a close. An open file stays
// bound to its thread: once the thread is gone it fails with ESRCH, even
// if its pid is reused.
type taskFiles struct {
	pid, tid int
	fds      [nFiles]int
	used     uint64 // the look that last used it
}

// maxTaskFiles bounds the threads whose files stay open (three fds each).
const maxTaskFiles = 16

// readTask reads one of a thread's /proc files into p.buf.
func (p *Probe) readTask(pid, tid, which int) ([]byte, error) {
	tf := p.taskFiles(pid, tid)
	if tf.fds[which] < 0 {
		fd, err := unix.Open(taskPath(pid, tid, taskFileNames[which]), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		tf.fds[which] = fd
	}
	for {
		n, err := unix.Pread(tf.fds[which], p.buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = unix.ESRCH
		}
		if err != nil {
			p.dropTask(tf)
			return nil, err
		}
		return p.buf[:n], nil
	}
}

func (p *Probe) taskFiles(pid, tid int) *taskFiles {
	for _, tf := range p.tasks {
		if tf.pid == pid && tf.tid == tid {
			tf.used = p.looks
			return tf
		}
	}
	if len(p.tasks) == maxTaskFiles {
		oldest := p.tasks[0]
		for _, tf := range p.tasks {
			if tf.used < oldest.used {
				oldest = tf
			}
		}
		p.dropTask(oldest)
	}
	tf := &taskFiles{pid: pid, tid: tid, fds: [nFiles]int{-1, -1, -1}, used: p.looks}
	p.tasks = append(p.tasks, tf)
	return tf
}

func (p *Probe) dropTask(tf *taskFiles) {
	for i, t := range p.tasks {
		if t == tf {
			p.tasks = append(p.tasks[:i], p.tasks[i+1:]...)
			break
		}
	}
	for _, fd := range tf.fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}
