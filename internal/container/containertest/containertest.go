// Package containertest makes the test image of the task-environment
// tests: a root file system from the host's static busybox and bash
// (Debian's busybox-static and bash-static) and a tool, imgtool, that
// exists only in the image, imported into the engine's store (no pull).
// Its working directory is /testbed and its PATH puts /opt/tool/bin first.
//
// imgtool check FILE passes (exit 0, "imgtool: 1 passed, 0 failed") when
// FILE contains the word "fixed", and fails otherwise: a task whose tests
// pass only inside the image.
package containertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"time"
)

// The host's static binaries the image is made from.
const (
	HostBusybox = "/bin/busybox"
	HostBash    = "/bin/bash-static"
)

// Changes are the image's Dockerfile instructions.
var Changes = []string{"WORKDIR /testbed", "ENV PATH=/opt/tool/bin:/bin"}

// Importer is the part of a container engine Image needs
// (*container.Engine).
type Importer interface {
	ImageID(ctx context.Context, ref string) (string, error)
	Import(ctx context.Context, tarball []byte, ref string, changes ...string) error
}

// Image imports the test image unless the engine has it already, and
// returns its reference: localhost/truss-test:HASH, named after the
// root file system's content.
func Image(ctx context.Context, e Importer) (string, error) {
	tarball, err := Rootfs()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(tarball)
	ref := "localhost/truss-test:" + hex.EncodeToString(sum[:6])
	if _, err := e.ImageID(ctx, ref); err == nil {
		return ref, nil
	}
	if err := e.Import(ctx, tarball, ref, Changes...); err != nil {
		return "", fmt.Errorf("import the test image: %w", err)
	}
	return ref, nil
}

// Rootfs is the test image's file system as a tarball.
func Rootfs() ([]byte, error) {
	bb, err := os.ReadFile(HostBusybox)
	if err != nil {
		return nil, fmt.Errorf("no static busybox: %w", err)
	}
	bash, err := os.ReadFile(HostBash)
	if err != nil {
		return nil, fmt.Errorf("no static bash: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dir := func(name string, mode int64) {
		tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: mode, ModTime: epoch})
	}
	file := func(name string, mode int64, data []byte) {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data)), ModTime: epoch})
		tw.Write(data)
	}
	for _, d := range []string{"bin", "etc", "opt", "opt/tool", "opt/tool/bin", "proc", "sys", "dev", "testbed", "root"} {
		dir(d, 0o755)
	}
	dir("tmp", 0o1777)
	file("bin/busybox", 0o755, bb)
	file("bin/bash", 0o755, bash)
	for _, applet := range []string{"sh", "ls", "cat", "echo", "id", "sleep", "ps", "stat", "mkdir", "rm", "touch", "grep", "wc", "true", "false", "env", "head", "kill", "test", "["} {
		tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: epoch})
	}
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	file("etc/group", 0o644, []byte("root:x:0:\n"))
	// imgtool is the toolchain the host lacks: the task's tests need it.
	file("opt/tool/bin/imgtool", 0o755, []byte("#!/bin/sh\n# imgtool check FILE: passes when FILE says fixed\ncase \"$1\" in\ncheck) grep -q fixed \"$2\" && echo 'imgtool: 1 passed, 0 failed' && exit 0; echo 'imgtool: 0 passed, 1 failed'; exit 1;;\n*) echo imgtool-ok;;\nesac\n"))
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
