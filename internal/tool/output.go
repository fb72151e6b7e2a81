package tool

import "context"

// OutputFunc receives a running command's output as it arrives, before
// its result: stream is "stdout" or "stderr", p the bytes (valid only
// during the call). It is what a person watches; the result still holds
// exactly what the tool returns to the model. It must return quickly
// (the command's output waits for it) and must not call back into the
// tool.
type OutputFunc func(stream string, p []byte)

type outputKey struct{}

// WithOutput returns ctx carrying f: an executor that runs a command
// streams its output to f as it arrives.
func WithOutput(ctx context.Context, f OutputFunc) context.Context {
	return context.WithValue(ctx, outputKey{}, f)
}

// OutputOf returns the OutputFunc ctx carries, nil for none.
func OutputOf(ctx context.Context) OutputFunc {
	f, _ := ctx.Value(outputKey{}).(OutputFunc)
	return f
}
