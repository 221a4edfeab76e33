package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/hosts"
)

// checkHosts reports, for every agent host whose config is on this
// machine, whether it runs this mcpgate: one check per host, named by its
// ID; the hosts not found share one line.
func (d *doctor) checkHosts() {
	env, err := d.app.hostsEnv()
	if err != nil {
		d.add(finding{Group: groupHosts, Name: "hosts", Status: checkWarn, Detail: "not checked: " + sanitize(err.Error()), Fix: "set HOME"})
		return
	}
	bin, err := thisBinary()
	if err != nil {
		d.add(finding{Group: groupHosts, Name: "hosts", Status: checkWarn, Detail: "not checked: " + sanitize(err.Error())})
		return
	}
	var absent []string
	for _, h := range hosts.All() {
		path, err := h.Path(env, hosts.ScopeUser)
		if err != nil {
			continue // every host has a user config
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if !h.Found(env) {
				absent = append(absent, h.ID)
				continue
			}
			d.add(finding{Group: groupHosts, Name: h.ID, Status: checkOK,
				Detail: fmt.Sprintf("%s is on this machine, without a config yet (%s); to add mcpgate: mcpgate install %s", h.Name, path, h.ID)})
			continue
		}
		d.add(hostFinding(h, path, bin))
	}
	if len(absent) > 0 {
		d.add(finding{Group: groupHosts, Name: "others", Status: checkOK, Detail: "not on this machine: " + strings.Join(absent, ", ")})
	}
}

// hostFinding is whether h's config at path runs bin.
func hostFinding(h hosts.Host, path, bin string) finding {
	f := finding{Group: groupHosts, Name: h.ID, Status: checkOK}
	install := "mcpgate install " + h.ID
	argv, found, err := hosts.Entry(h, path)
	if pe, ok := errors.AsType[*hosts.ParseError](err); ok {
		f.Status = checkWarn
		f.Detail = fmt.Sprintf("%s does not parse as %s%s: %s; %s cannot read its MCP servers",
			path, pe.Format, position(pe), mcpgate.Sanitize(pe.Reason, 200), h.Name)
		f.Fix = "edit " + path + position(pe)
		return f
	}
	switch {
	case err != nil:
		f.Status, f.Detail = checkWarn, sanitize(err.Error())
		f.Fix = fmt.Sprintf("check that %s is readable by you and what %s expects in it", path, h.Name)
		return f
	case !found:
		f.Detail = fmt.Sprintf("%s (%s) does not run mcpgate; to add it: %s", h.Name, path, install)
		return f
	case len(argv) == 0:
		f.Detail = fmt.Sprintf("%s (%s) has an mcpgate entry that runs no local command (a hosted mcpgate?)", h.Name, path)
		return f
	}
	// A hand-edited entry may carry a token among its arguments.
	cmdline := mcpgate.Sanitize(strings.Join(argv, " "), 300)
	runs, err := resolveCommand(argv[0])
	switch {
	case errors.Is(err, exec.ErrNotFound):
		f.Status = checkFail
		f.Detail = fmt.Sprintf("%s (%s) runs %s, which is not found on PATH: its mcpgate tool fails to start", h.Name, path, cmdline)
		f.Fix = install + " (writes this binary's path, " + bin + ")"
	case errors.Is(err, fs.ErrNotExist):
		f.Status = checkFail
		f.Detail = fmt.Sprintf("%s (%s) runs %s, which no longer exists: its mcpgate tool fails to start", h.Name, path, cmdline)
		f.Fix = install + " (writes this binary, " + bin + ")"
	case err != nil:
		reason := "it cannot be read"
		if errors.Is(err, fs.ErrPermission) {
			reason = "permission denied"
		}
		f.Status = checkWarn
		f.Detail = fmt.Sprintf("%s (%s) runs %s, which cannot be checked: %s", h.Name, path, cmdline, reason)
		f.Fix = install + " (writes this binary, " + bin + ")"
	case runs != bin:
		f.Status = checkWarn
		f.Detail = fmt.Sprintf("%s (%s) runs another mcpgate: %s (this one is %s)", h.Name, path, cmdline, bin)
		f.Fix = install + " to run this one"
	default:
		f.Detail = fmt.Sprintf("%s (%s) runs this mcpgate: %s", h.Name, path, cmdline)
	}
	return f
}

// resolveCommand is the file a host's command runs, symlinks resolved:
// a bare name is looked up in PATH (this process's, which may not be the
// host's).
func resolveCommand(cmd string) (string, error) {
	if !strings.ContainsAny(cmd, `/\`) {
		p, err := exec.LookPath(cmd)
		if err != nil {
			return "", err
		}
		cmd = p
	}
	p, err := filepath.EvalSymlinks(cmd)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// position is " line L, column C" of a parse error, or "".
func position(pe *hosts.ParseError) string {
	switch {
	case pe.Line > 0 && pe.Column > 0:
		return fmt.Sprintf(" at line %d, column %d", pe.Line, pe.Column)
	case pe.Line > 0:
		return fmt.Sprintf(" at line %d", pe.Line)
	}
	return ""
}
