package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData lays out a struct seccomp_data as a filter on a
// little-endian machine reads it: each 32-bit load sees the native word;
// x/net/bpf's VM loads big-endian, so each word is stored big-endian at
// its offset, the low half of an argument first.
func seccompData(nr int, auditArch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], uint32(nr))
	binary.BigEndian.PutUint32(b[offArch:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[offArgs+8*i+4:], uint32(a>>32))
	}
	return b
}

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)

	retEOPNOTSUPP = unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)
)

// TestSeccompFilter runs the assembled filter in a BPF interpreter on the
// system calls it must refuse and those it must let through.
func TestSeccompFilter(t *testing.T) {
	a := arch.X86_64
	nr := func(name string) int { return a.SyscallNames[name] }
	off := filterOptions{noNetwork: true, noPathSockets: true}
	offLandlock := filterOptions{noNetwork: true} // Landlock restricts Unix sockets by path
	on := filterOptions{}
	netns := filterOptions{noNetwork: true, privateNet: true} // namespaces: only the loopback, the host's sockets covered
	cases := []struct {
		name string
		opts filterOptions
		data []byte
		want uint32
	}{
		{"getpid", off, seccompData(nr("getpid"), uint32(a.ID)), retAllow},
		{"read", on, seccompData(nr("read"), uint32(a.ID), 0, 0, 10), retAllow},
		{"int 0x80 unshare", off, seccompData(310, uint32(arch.I386.ID), unix.CLONE_NEWUSER), retKill},
		{"int 0x80 getpid", on, seccompData(20, uint32(arch.I386.ID)), retKill},
		{"aarch64 call", on, seccompData(0, uint32(arch.AARCH64.ID)), retKill},
		{"x32 socket", on, seccompData(41|x32Bit, uint32(a.ID), unix.AF_INET), retNOSYS},
		{"x32 getpid", on, seccompData(39|x32Bit, uint32(a.ID)), retNOSYS},
		{"ptrace", on, seccompData(nr("ptrace"), uint32(a.ID)), retEPERM},
		{"process_vm_readv", on, seccompData(nr("process_vm_readv"), uint32(a.ID)), retEPERM},
		{"process_vm_writev", netns, seccompData(nr("process_vm_writev"), uint32(a.ID)), retEPERM},
		{"pidfd_getfd", on, seccompData(nr("pidfd_getfd"), uint32(a.ID)), retEPERM},
		{"process_madvise", on, seccompData(nr("process_madvise"), uint32(a.ID)), retEPERM},
		{"kcmp", off, seccompData(nr("kcmp"), uint32(a.ID)), retEPERM},
		{"pidfd_open", on, seccompData(nr("pidfd_open"), uint32(a.ID)), retAllow},
		{"unshare user", on, seccompData(nr("unshare"), uint32(a.ID), unix.CLONE_NEWUSER), retEPERM},
		{"setns", on, seccompData(nr("setns"), uint32(a.ID)), retEPERM},
		{"clone newuser", on, seccompData(nr("clone"), uint32(a.ID), unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM},
		{"clone newnet", on, seccompData(nr("clone"), uint32(a.ID), unix.CLONE_NEWNET), retEPERM},
		{"clone newtime", on, seccompData(nr("clone"), uint32(a.ID), unix.CLONE_NEWTIME), retEPERM},
		{"clone fork", on, seccompData(nr("clone"), uint32(a.ID), uint64(unix.SIGCHLD)), retAllow},
		{"clone thread", on, seccompData(nr("clone"), uint32(a.ID), unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM|unix.CLONE_SETTLS|unix.CLONE_PARENT_SETTID|unix.CLONE_CHILD_CLEARTID), retAllow},
		{"clone3", on, seccompData(nr("clone3"), uint32(a.ID)), retNOSYS},
		{"TIOCSTI", on, seccompData(nr("ioctl"), uint32(a.ID), 0, unix.TIOCSTI), retEPERM},
		{"TIOCSTI high bits", on, seccompData(nr("ioctl"), uint32(a.ID), 0, 1<<32|unix.TIOCSTI), retEPERM},
		{"TIOCLINUX", on, seccompData(nr("ioctl"), uint32(a.ID), 0, tiocLinux), retEPERM},
		{"TIOCGWINSZ", off, seccompData(nr("ioctl"), uint32(a.ID), 0, unix.TIOCGWINSZ), retAllow},
		{"socket inet", off, seccompData(nr("socket"), uint32(a.ID), unix.AF_INET, unix.SOCK_STREAM), retEPERM},
		{"socket inet high bits", off, seccompData(nr("socket"), uint32(a.ID), 1<<32|unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socket netlink", offLandlock, seccompData(nr("socket"), uint32(a.ID), unix.AF_NETLINK, unix.SOCK_RAW), retEPERM},
		{"socket inet, network on", on, seccompData(nr("socket"), uint32(a.ID), unix.AF_INET, unix.SOCK_STREAM), retAllow},
		{"socket unix stream", off, seccompData(nr("socket"), uint32(a.ID), unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), retAllow},
		{"socket unix seqpacket", off, seccompData(nr("socket"), uint32(a.ID), unix.AF_UNIX, unix.SOCK_SEQPACKET), retAllow},
		{"socket unix dgram", off, seccompData(nr("socket"), uint32(a.ID), unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK), retEPERM},
		{"socket unix dgram, landlock", offLandlock, seccompData(nr("socket"), uint32(a.ID), unix.AF_UNIX, unix.SOCK_DGRAM), retAllow},
		{"socketpair unix stream", off, seccompData(nr("socketpair"), uint32(a.ID), unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socketpair unix dgram", off, seccompData(nr("socketpair"), uint32(a.ID), unix.AF_UNIX, unix.SOCK_DGRAM), retEPERM},
		{"socketpair inet", off, seccompData(nr("socketpair"), uint32(a.ID), unix.AF_INET, unix.SOCK_STREAM), retEPERM},
		{"connect", off, seccompData(nr("connect"), uint32(a.ID), 3), retEPERM},
		{"connect, landlock", offLandlock, seccompData(nr("connect"), uint32(a.ID), 3), retAllow},
		{"connect, network on", on, seccompData(nr("connect"), uint32(a.ID), 3), retAllow},
		{"io_uring_setup", on, seccompData(nr("io_uring_setup"), uint32(a.ID)), retEPERM},
		{"socket inet, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), retAllow},
		{"socket inet6 udp, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_INET6, unix.SOCK_DGRAM), retAllow},
		{"socket inet raw, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_INET, unix.SOCK_RAW), retEPERM},
		{"socket inet6 raw, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_NONBLOCK), retEPERM},
		{"socket packet, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_PACKET, unix.SOCK_RAW), retEPERM},
		{"socket vsock, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_VSOCK, unix.SOCK_STREAM), retEPERM},
		{"socket netlink route, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), retAllow},
		{"socket netlink audit, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT), retEPERM},
		{"socket unix dgram, private netns", netns, seccompData(nr("socket"), uint32(a.ID), unix.AF_UNIX, unix.SOCK_DGRAM), retAllow},
		{"connect, private netns", netns, seccompData(nr("connect"), uint32(a.ID), 3), retAllow},
		{"umount2, network on", on, seccompData(nr("umount2"), uint32(a.ID)), retEPERM},
		{"mount, network on", on, seccompData(nr("mount"), uint32(a.ID)), retEPERM},
		{"move_mount, network on", on, seccompData(nr("move_mount"), uint32(a.ID)), retEPERM},
		{"open_tree, network on", on, seccompData(nr("open_tree"), uint32(a.ID)), retEPERM},
		{"fallocate", on, seccompData(nr("fallocate"), uint32(a.ID), 3, 0, 0, 257<<20), retEOPNOTSUPP},
		{"fallocate keep size", netns, seccompData(nr("fallocate"), uint32(a.ID), 3, unix.FALLOC_FL_KEEP_SIZE, 0, 257<<20), retEOPNOTSUPP},
		{"fallocate zero range", netns, seccompData(nr("fallocate"), uint32(a.ID), 3, unix.FALLOC_FL_ZERO_RANGE, 0, 257<<20), retEOPNOTSUPP},
		{"chmod 4755", on, seccompData(nr("chmod"), uint32(a.ID), 0, 0o4755), retEPERM},
		{"chmod 2755", off, seccompData(nr("chmod"), uint32(a.ID), 0, 0o2755), retEPERM},
		{"chmod 755", on, seccompData(nr("chmod"), uint32(a.ID), 0, 0o755), retAllow},
		{"chmod sticky", on, seccompData(nr("chmod"), uint32(a.ID), 0, 0o1777), retAllow},
		{"fchmod 4755", netns, seccompData(nr("fchmod"), uint32(a.ID), 3, 0o4755), retEPERM},
		{"fchmod 644", netns, seccompData(nr("fchmod"), uint32(a.ID), 3, 0o644), retAllow},
		{"fchmodat u+s", on, seccompData(nr("fchmodat"), uint32(a.ID), unix.AT_FDCWD&0xffffffff, 0, 0o4700), retEPERM},
		{"fchmodat 700", on, seccompData(nr("fchmodat"), uint32(a.ID), unix.AT_FDCWD&0xffffffff, 0, 0o700), retAllow},
		{"fchmodat2 g+s", on, seccompData(nr("fchmodat2"), uint32(a.ID), 3, 0, 0o2770, unix.AT_SYMLINK_NOFOLLOW), retEPERM},
		{"fchmodat2 770", on, seccompData(nr("fchmodat2"), uint32(a.ID), 3, 0, 0o770, unix.AT_SYMLINK_NOFOLLOW), retAllow},
		{"creat 4755", on, seccompData(nr("creat"), uint32(a.ID), 0, 0o4755), retEPERM},
		{"creat 644", on, seccompData(nr("creat"), uint32(a.ID), 0, 0o644), retAllow},
		{"mknod regular 4755", on, seccompData(nr("mknod"), uint32(a.ID), 0, unix.S_IFREG|0o4755), retEPERM},
		{"mknodat fifo", on, seccompData(nr("mknodat"), uint32(a.ID), 3, 0, unix.S_IFIFO|0o644), retAllow},
		{"mknodat regular 6755", on, seccompData(nr("mknodat"), uint32(a.ID), 3, 0, unix.S_IFREG|0o6755), retEPERM},
		{"open create 4755", on, seccompData(nr("open"), uint32(a.ID), 0, unix.O_CREAT|unix.O_WRONLY, 0o4755), retEPERM},
		{"open create 644", on, seccompData(nr("open"), uint32(a.ID), 0, unix.O_CREAT|unix.O_WRONLY, 0o644), retAllow},
		{"open read, mode garbage", on, seccompData(nr("open"), uint32(a.ID), 0, unix.O_RDONLY, 0o4755), retAllow},
		{"openat create 4755", netns, seccompData(nr("openat"), uint32(a.ID), 3, 0, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o4755), retEPERM},
		{"openat tmpfile 2755", netns, seccompData(nr("openat"), uint32(a.ID), 3, 0, unix.O_TMPFILE|unix.O_WRONLY, 0o2755), retEPERM},
		{"openat create 755", netns, seccompData(nr("openat"), uint32(a.ID), 3, 0, unix.O_CREAT|unix.O_WRONLY, 0o755), retAllow},
		{"openat directory, mode garbage", netns, seccompData(nr("openat"), uint32(a.ID), 3, 0, unix.O_DIRECTORY, 0o6000), retAllow},
		{"setxattr", on, seccompData(nr("setxattr"), uint32(a.ID)), retEOPNOTSUPP},
		{"lsetxattr", off, seccompData(nr("lsetxattr"), uint32(a.ID)), retEOPNOTSUPP},
		{"fsetxattr", netns, seccompData(nr("fsetxattr"), uint32(a.ID)), retEOPNOTSUPP},
		{"setxattrat", on, seccompData(nr("setxattrat"), uint32(a.ID)), retEOPNOTSUPP},
		{"getxattr", on, seccompData(nr("getxattr"), uint32(a.ID)), retAllow},
		{"removexattr", on, seccompData(nr("removexattr"), uint32(a.ID)), retAllow},
		{"openat2", on, seccompData(nr("openat2"), uint32(a.ID), 3, 0, 0, 24), retNOSYS},
		{"fallocate punch hole", netns, seccompData(nr("fallocate"), uint32(a.ID), 3, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096), retAllow},
	}
	progs := map[filterOptions]*bpf.VM{}
	for _, c := range cases {
		vm := progs[c.opts]
		if vm == nil {
			insts, err := assembleFilter(a, seccompRules(c.opts))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bpf.Assemble(insts); err != nil {
				t.Fatal(err)
			}
			if vm, err = bpf.NewVM(insts); err != nil {
				t.Fatal(err)
			}
			progs[c.opts] = vm
		}
		got, err := vm.Run(c.data)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if uint32(got) != c.want {
			t.Errorf("%s: the filter returned %s, want %s", c.name, retName(uint32(got)), retName(c.want))
		}
	}
}

func retName(v uint32) string {
	switch v & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "allow"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "kill process"
	case unix.SECCOMP_RET_ERRNO:
		return fmt.Sprintf("errno %v", unix.Errno(v&unix.SECCOMP_RET_DATA))
	}
	return fmt.Sprintf("%#x", v)
}
