package sandbox

import (
	"fmt"
	"runtime"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/sandbox/helper"
)

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// x32Bit marks an x32 system call number on x86-64.
const x32Bit = 0x40000000

// nsCloneFlags are the clone flags that make a namespace.
const nsCloneFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// TIOCLINUX is the Linux console's ioctl (not in x/sys/unix).
const tiocLinux = 0x541C

// condOp is how an argument is compared.
type condOp int

const (
	opEq     condOp = iota // the (masked) low word equals val
	opNe                   // it does not
	opAnySet               // any bit of val is set in it
)

// argCond is one test of a system call argument. Only the low 32 bits are
// compared: every argument tested is an int or unsigned int to the kernel
// (a family, a type, an ioctl request, namespace flags), so bits above
// them cannot change what the call does and must not let it past.
type argCond struct {
	arg  int
	mask uint32 // applied first when not zero
	op   condOp
	val  uint32
}

// sysRule refuses a system call, with errno, when all its conditions hold
// (always when it has none).
type sysRule struct {
	name  string
	errno unix.Errno
	conds []argCond
}

// filterOptions are what the seccomp filter refuses beyond the fixed list.
type filterOptions struct {
	// Network off: sockets of families other than AF_UNIX.
	noNetwork bool
	// With the network off, the commands' network namespace is their own,
	// with the loopback as its only interface: Internet sockets (TCP, UDP)
	// stay in it, and so do routing netlink sockets (getaddrinfo and
	// net.Interfaces read the interfaces with them; a change reaches
	// nothing but the namespace). Every other family is refused — packet,
	// vsock (not namespaced: it reaches the hypervisor), the rest — and so
	// are raw Internet sockets.
	privateNet bool
	// Unix sockets the file system names (the host's daemons, terminal
	// multiplexers, agents) cannot be refused by path here; without a
	// Landlock that does (ABI 9), connect is refused and only stream and
	// seqpacket Unix sockets can be made, whose sends carry no address.
	noPathSockets bool
}

// TraceCalls are the system calls that reach into another process —
// trace it (and so rewrite its code or registers), read or write its
// memory, take its descriptors, compare its kernel objects, advise on its
// memory — which every sandbox refuses with EPERM (a task environment's
// containers refuse the same list). The sandbox's processes share a user
// and a user namespace, where the kernel's own checks let one trace
// another: the shell, a command of another call, a sub-agent's.
func TraceCalls() []string {
	return []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp"}
}

// seccompRules lists the refusals of the filter.
func seccompRules(o filterOptions) []sysRule {
	var rules []sysRule
	deny := func(names ...string) {
		for _, n := range names {
			rules = append(rules, sysRule{name: n, errno: unix.EPERM})
		}
	}
	deny(TraceCalls()...)
	deny("io_uring_setup", "io_uring_enter", "io_uring_register", // io_uring makes sockets without socket()
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
		"unshare", "setns", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"bpf", "perf_event_open", "userfaultfd", "add_key", "request_key", "keyctl")
	// New namespaces: clone with a namespace flag is refused; clone3,
	// whose flags are behind a pointer, answers ENOSYS so that libc falls
	// back to clone.
	flagsArg := 0
	if runtime.GOARCH == "s390x" {
		flagsArg = 1 // clone(stack, flags, …)
	}
	rules = append(rules,
		sysRule{name: "clone", errno: unix.EPERM, conds: []argCond{{arg: flagsArg, op: opAnySet, val: nsCloneFlags}}},
		sysRule{name: "clone3", errno: unix.ENOSYS},
	)
	// The terminal: no typing into it, no console tricks.
	for _, req := range []uint32{unix.TIOCSTI, tiocLinux} {
		rules = append(rules, sysRule{name: "ioctl", errno: unix.EPERM, conds: []argCond{{arg: 1, op: opEq, val: req}}})
	}
	// Allocating space without writing it (fallocate) fails as a file
	// system without it would, with EOPNOTSUPP: the disk budget counts what
	// is written, and posix_fallocate falls back to writing. Punching
	// holes and collapsing ranges, which free space, stay allowed.
	rules = append(rules, sysRule{name: "fallocate", errno: unix.EOPNOTSUPP, conds: []argCond{{arg: 1, mask: unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_COLLAPSE_RANGE, op: opEq, val: 0}}})
	rules = append(rules, setIDRules()...)
	rules = append(rules, xattrRules()...)
	switch {
	case o.noNetwork && o.privateNet:
		for _, n := range []string{"socket", "socketpair"} {
			rules = append(rules, sysRule{name: n, errno: unix.EPERM, conds: []argCond{
				{arg: 0, op: opNe, val: unix.AF_UNIX},
				{arg: 0, op: opNe, val: unix.AF_INET},
				{arg: 0, op: opNe, val: unix.AF_INET6},
				{arg: 0, op: opNe, val: unix.AF_NETLINK},
			}})
		}
		rules = append(rules, sysRule{name: "socket", errno: unix.EPERM, conds: []argCond{{arg: 0, op: opEq, val: unix.AF_NETLINK}, {arg: 2, op: opNe, val: unix.NETLINK_ROUTE}}})
		for _, fam := range []uint32{unix.AF_INET, unix.AF_INET6} {
			rules = append(rules, sysRule{name: "socket", errno: unix.EPERM, conds: []argCond{{arg: 0, op: opEq, val: fam}, {arg: 1, mask: 0xf, op: opEq, val: unix.SOCK_RAW}}})
		}
	case o.noNetwork:
		for _, n := range []string{"socket", "socketpair"} {
			rules = append(rules, sysRule{name: n, errno: unix.EPERM, conds: []argCond{{arg: 0, op: opNe, val: unix.AF_UNIX}}})
		}
	}
	if o.noNetwork && o.noPathSockets {
		deny("connect")
		for _, n := range []string{"socket", "socketpair"} {
			rules = append(rules, sysRule{name: n, errno: unix.EPERM, conds: []argCond{
				{arg: 1, mask: 0xf, op: opNe, val: unix.SOCK_STREAM},
				{arg: 1, mask: 0xf, op: opNe, val: unix.SOCK_SEQPACKET},
			}})
		}
	}
	return rules
}

// setID are the mode bits that make a program run as its file's owner or
// group.
const setID = unix.S_ISUID | unix.S_ISGID

// oCreate are the open flags with which the mode argument is used: a
// file is made with it (O_TMPFILE without its O_DIRECTORY bit, which
// alone means something else).
const oCreate = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY

// setIDRules refuse, with EPERM, every system call that gives a file the
// set-user-ID or set-group-ID bit: a command that is root in its user
// namespace, which maps to root on the host when Truss runs as root,
// would otherwise leave a set-user-ID-root program in the workspace for
// anyone on the host to run (as Flatpak and Nix's build sandbox refuse
// them). They are the chmod family (chmod, fchmod, fchmodat, fchmodat2),
// the calls that make a file with a mode (creat, mknod, mknodat; open and
// openat when O_CREAT or O_TMPFILE makes them read it); openat2, whose
// mode is behind a pointer, fails with ENOSYS, as on a kernel without it,
// so that callers fall back to openat. chmod 755 and an open without the
// bits are untouched.
func setIDRules() []sysRule {
	mode := func(name string, arg int) sysRule {
		return sysRule{name: name, errno: unix.EPERM, conds: []argCond{{arg: arg, op: opAnySet, val: setID}}}
	}
	opened := func(name string, flags, modeArg int) sysRule {
		return sysRule{name: name, errno: unix.EPERM, conds: []argCond{{arg: flags, op: opAnySet, val: oCreate}, {arg: modeArg, op: opAnySet, val: setID}}}
	}
	return []sysRule{
		mode("chmod", 1), mode("fchmod", 1), mode("fchmodat", 2), mode("fchmodat2", 2),
		mode("creat", 1), mode("mknod", 1), mode("mknodat", 2),
		opened("open", 1, 2), opened("openat", 2, 3),
		{name: "openat2", errno: unix.ENOSYS},
	}
}

// xattrRules refuse setting extended attributes, with EOPNOTSUPP, as a
// file system without them answers (cp -a and rsync -X then go on
// without them): a file capability (security.capability) written by a
// command that is root in its user namespace, mapped to root on the
// host, makes a program privileged on the host as set-user-ID root does,
// and the attribute's name, behind a pointer, cannot be told apart (Nix's
// build sandbox refuses them all the same way). Reading and removing
// attributes stay allowed.
func xattrRules() []sysRule {
	var rules []sysRule
	for _, n := range []string{"setxattr", "lsetxattr", "fsetxattr", "setxattrat"} {
		rules = append(rules, sysRule{name: n, errno: unix.EOPNOTSUPP})
	}
	return rules
}

// assembleFilter compiles rules into a seccomp program for an
// architecture: a system call of any other architecture kills the process
// (on x86-64 that is an IA-32 call through int 0x80, which the numbers
// below do not describe), an x32 call fails with ENOSYS, a refused call
// fails with its errno, and everything else is allowed.
func assembleFilter(a *arch.Info, rules []sysRule) ([]bpf.Instruction, error) {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(a.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}
	if a.ID == arch.X86_64.ID {
		prog = append(prog,
			bpf.LoadAbsolute{Off: offNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		)
	}
	for _, r := range rules {
		nr, ok := a.SyscallNames[r.name]
		if !ok {
			continue // this architecture has no such call
		}
		// One block per rule, entered with nothing loaded: load the
		// number; on a mismatch, or a condition that does not hold, skip
		// to the block's end (the next rule).
		block := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}, nil}
		var fails []int // indexes of jumps whose false branch leaves the block
		for _, c := range r.conds {
			if c.arg < 0 || c.arg > 5 {
				return nil, fmt.Errorf("seccomp rule %s: no argument %d", r.name, c.arg)
			}
			block = append(block, bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.arg), Size: 4})
			if c.mask != 0 {
				block = append(block, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
			}
			switch c.op {
			case opEq:
				block = append(block, bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.val})
			case opNe:
				block = append(block, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: c.val})
			case opAnySet:
				block = append(block, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.val})
			}
			fails = append(fails, len(block)-1)
		}
		block = append(block, bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(r.errno)})
		end := len(block)
		if end > 255 {
			return nil, fmt.Errorf("seccomp rule %s: too long", r.name)
		}
		block[1] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr | a.SeccompMask), SkipFalse: uint8(end - 2)}
		for _, i := range fails {
			j := block[i].(bpf.JumpIf)
			j.SkipFalse = uint8(end - i - 1)
			block[i] = j
		}
		prog = append(prog, block...)
	}
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	if len(prog) > 4096 {
		return nil, fmt.Errorf("seccomp program of %d instructions is too long", len(prog))
	}
	return prog, nil
}

// seccompProgram assembles the filter the helper loads, for this
// architecture, encoded for the helper's spec. It is assembled once, by
// Truss, so that the helper carries no filter compiler.
func seccompProgram(o filterOptions) ([]byte, error) {
	a, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	insts, err := assembleFilter(a, seccompRules(o))
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, err
	}
	return helper.EncodeFilter(raw), nil
}
