package trusscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/trussdev/truss/internal/cli"
	"io"
	"time"

	"github.com/trussdev/truss/internal/container"
)

// cmdEnv is truss env check: which container engine works on this host
// and the settings containers get here (the runtime, the cgroup manager,
// ulimits below the host's hard limits), found by starting a probe
// container with candidate settings. It exits 1 when no engine works.
func cmdEnv(args []string, stdout, stderr io.Writer) error {
	const use = "usage: truss env check [--engine podman|docker] [--image REF] [--json]"
	if len(args) == 0 || args[0] != "check" {
		return cli.Usagef(use)
	}
	fset := cli.NewFlagSet("env check", stderr)
	engine := fset.String("engine", "", "the engine to check: podman or docker (default: the first that works)")
	image := fset.String("image", "", "also look up this image in the engine's store (its ID, repository digests and working directory)")
	asJSON := fset.Bool("json", false, "print the report as one JSON object")
	if err := cli.ParseNone(fset, args[1:]); err != nil {
		return err
	}
	if *image != "" {
		if err := container.ValidateReference(*image); err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
	}
	ctx, cancel := cli.SignalContext(stderr)
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	out := struct {
		Report   *container.Report   `json:"report,omitempty"`
		NotFound []container.Attempt `json:"not_found,omitempty"`
		Image    string              `json:"image,omitempty"`
		ImageID  string              `json:"image_id,omitempty"`
		Error    string              `json:"error,omitempty"`
	}{Image: *image}
	var failed error
	e, err := container.Find(ctx, *engine)
	if err != nil {
		failed = err
		var nf *container.NotFoundError
		if errors.As(err, &nf) {
			out.NotFound = nf.Tried
		}
	} else {
		r, err := e.Check(ctx)
		out.Report = &r
		failed = err
		if err == nil && *image != "" {
			if out.ImageID, err = e.ImageID(ctx, *image); err != nil {
				failed = err
			}
		}
	}
	if failed != nil {
		out.Error = failed.Error()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		for _, a := range out.NotFound {
			fmt.Fprintf(stdout, "engine   %s: not found: %s\n", a.Name, a.Reason)
		}
		if out.Report != nil {
			fmt.Fprint(stdout, out.Report.String())
		}
		if out.ImageID != "" {
			fmt.Fprintf(stdout, "image    %s: %s\n", *image, out.ImageID)
		}
	}
	if failed != nil {
		if !*asJSON {
			fmt.Fprintf(stdout, "error    %s\n", oneLine(failed.Error()))
		}
		return cli.ExitError{Code: 1}
	}
	return nil
}
