package container

import (
	"context"
	"strings"
)

// ImageID returns the ID (config digest) of the image ref in the engine's
// store; an *ImageNotFoundError when it is not there.
func (e *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	img, err := e.inspectImage(ctx, ref)
	if err != nil {
		return "", err
	}
	return img.ID, nil
}

// Import imports a root file system (a tar archive) as the image ref,
// with Dockerfile instructions applied (changes: "WORKDIR /testbed",
// "ENV PATH=…"). It never pulls: an image made on this host from files
// at hand (the tests' images, the probe image).
func (e *Engine) Import(ctx context.Context, tarball []byte, ref string, changes ...string) error {
	if err := ValidateReference(ref); err != nil {
		return err
	}
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	args = append(args, "-", ref)
	_, err := e.run(ctx, tarball, e.command(ctx, args...))
	return err
}

// Containers lists the IDs of the containers, running or not, that carry
// label: a key ("truss.session") or KEY=VALUE.
func (e *Engine) Containers(ctx context.Context, label string) ([]string, error) {
	out, err := e.output(ctx, "ps", "-a", "-q", "--no-trunc", "--filter", "label="+label)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// Remove removes containers by ID, killing what runs in them.
func (e *Engine) Remove(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := e.output(ctx, e.rmArgs(ids...)...)
	return err
}
