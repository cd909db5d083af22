package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// A helper process is this test binary run again as one test of its own
// (case 6's viewers, case 2's instances), so its CPU and scheduler are not
// the caller's. It prints helperReady once set up; the caller then signals
// it through stdin if it waits for that, and reads what else it prints.

const helperReady = "LWBENCH-READY"

// helperProc is one running helper process.
type helperProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner // its stdout, after the ready line
	stderr bytes.Buffer
}

// startHelper runs the test named test with env added, and returns once it
// printed helperReady. ctx bounds it: the process is killed when ctx ends.
// Call wait when it returns no error.
func startHelper(ctx context.Context, test string, env ...string) (*helperProc, error) {
	h := &helperProc{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=5m")}
	h.cmd.Env = append(os.Environ(), env...)
	h.cmd.Stderr = &h.stderr
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	h.lines = bufio.NewScanner(stdout)
	var tail []string
	for h.lines.Scan() { // bounded by ctx: the process is killed at its end
		if strings.HasPrefix(h.lines.Text(), helperReady) {
			return h, nil
		}
		tail = append(tail, h.lines.Text())
	}
	h.cmd.Wait()
	return nil, fmt.Errorf("%s: %s %s", test, strings.Join(tail, "\n"), h.stderr.String())
}

// wait reads the rest of its output, handing each line to line (may be
// nil), and waits for it to exit.
func (h *helperProc) wait(line func(string)) error {
	for h.lines.Scan() {
		if line != nil {
			line(h.lines.Text())
		}
	}
	if err := h.cmd.Wait(); err != nil {
		return fmt.Errorf("%v: %s", err, h.stderr.String())
	}
	return nil
}
