package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// desktopConfig is what the config says of desktops, as the installed
// agentd reads it (agentd --print-config): whether they are on, and which
// X server a new one gets.
type desktopConfig struct {
	// known is false when there is no agentd to ask, or it could not
	// read the config (the config check says why).
	known   bool
	enabled bool
	// server is desktop_server: auto, xvnc or xvfb.
	server string
	// file is where the config is, or would be.
	file string
}

// readDesktopConfig asks the installed agentd for the config's desktop
// settings. Its output is key = value lines, with the file in a first
// comment line: "# file: PATH" or "# file: none (PATH does not exist)".
func readDesktopConfig(ctx context.Context) desktopConfig {
	d := desktopConfig{server: "auto", file: "config.toml"}
	agentd := installedDaemon()
	if agentd == "" {
		return d
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, agentd, "--print-config").Output()
	if err != nil {
		return d
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# file: "); ok {
			if none, ok := strings.CutPrefix(f, "none ("); ok {
				f, _, _ = strings.Cut(none, " ")
			}
			d.file = f
			continue
		}
		key, value, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		value, _, _ = strings.Cut(value, "  #")
		switch key {
		case "desktops":
			d.enabled, d.known = value == "true", true
		case "desktop_server":
			if s, err := strconv.Unquote(value); err == nil {
				d.server = s
			}
		}
	}
	return d
}

// checkDesktops answers whether agents' desktops can work here: the X
// servers they run (Xvfb, and Xvnc, which a VNC viewer can watch), the
// window manager, and fonts for the text agents meet most often drawn as
// boxes (CJK, emoji). Each names its Debian package. With desktops off in
// the config, what is missing is said but is not a failure: sessions-only
// use is a setup of its own, as a display none is.
func checkDesktops(cfg desktopConfig) []doctorCheck {
	xvfb, _ := exec.LookPath("Xvfb")
	xvnc, _ := exec.LookPath("Xvnc")
	checks := []doctorCheck{
		checkXvfb(cfg, xvfb, xvnc),
		checkXvnc(cfg, xvnc),
		tool("desktop wm", "openbox", "openbox", "desktops need --wm none"),
		fontCheck("cjk fonts", ":lang=zh", "fonts-noto-cjk", "Chinese, Japanese and Korean text is drawn as boxes",
			"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),
		fontCheck("emoji fonts", ":charset=1f600:color=true", "fonts-noto-color-emoji", "emoji are drawn as boxes",
			"/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"),
	}
	if cfg.known && !cfg.enabled {
		for i, c := range checks {
			if c.Status == checkFail {
				checks[i].Status = checkSkipped
				checks[i].Detail += "; desktops are off (desktops = false in " + cfg.file + "), so nothing needs it yet"
				checks[i].Fix = "to use desktops: set desktops = true in " + cfg.file + ", and " + c.Fix
			}
		}
	}
	return checks
}

// checkXvfb is the desktop server check: Xvfb, which desktops run unless
// desktop_server (or desktop new --server) names Xvnc, or auto finds it.
func checkXvfb(cfg desktopConfig, xvfb, xvnc string) doctorCheck {
	c := doctorCheck{Name: "desktop server"}
	switch {
	case xvfb != "":
		c.Status, c.Detail = checkPass, xvfb
	case cfg.server == "xvnc":
		c.Status, c.Detail = checkSkipped, `Xvfb is not installed, and not needed: desktop_server = "xvnc"`
	case cfg.server != "xvfb" && xvnc != "":
		c.Status, c.Detail = checkSkipped, `Xvfb is not installed: desktops use Xvnc (desktop_server = "`+cfg.server+`"); desktop new --server xvfb fails`
	case cfg.server == "xvfb":
		c.Status, c.Detail = checkFail, `Xvfb is not installed, and desktop_server = "xvfb" in `+cfg.file+`: agentctl desktop new cannot start a desktop`
		c.Fix = `apt install xvfb, or set desktop_server = "auto" and apt install tigervnc-standalone-server for Xvnc`
	default:
		c.Status, c.Detail = checkFail, "neither Xvfb nor Xvnc is installed: agentctl desktop new cannot start a desktop"
		c.Fix = "apt install xvfb (or tigervnc-standalone-server for Xvnc, which a VNC viewer can watch)"
	}
	return c
}

// checkXvnc is the Xvnc check: whether new desktops get it, which serves
// RFB for a VNC viewer besides X.
func checkXvnc(cfg desktopConfig, xvnc string) doctorCheck {
	c := doctorCheck{Name: "desktop vnc"}
	switch {
	case xvnc != "" && cfg.server == "xvfb":
		c.Status, c.Detail = checkPass, xvnc+` (desktop_server = "xvfb": desktops use Xvfb unless desktop new --server xvnc)`
	case xvnc != "":
		c.Status, c.Detail = checkPass, xvnc+` (desktops use it, with RFB for a VNC viewer: desktop_server = "`+cfg.server+`")`
	case cfg.server == "xvnc":
		c.Status, c.Detail = checkFail, `Xvnc is not installed, and desktop_server = "xvnc" in `+cfg.file+`: agentctl desktop new fails`
		c.Fix = `apt install tigervnc-standalone-server, or set desktop_server = "auto" in ` + cfg.file + ` to use Xvfb`
	default:
		c.Status, c.Detail = checkSkipped, "Xvnc is not installed: desktops use Xvfb, which no VNC viewer can watch; apt install tigervnc-standalone-server for it"
	}
	return c
}

// tool checks that a program desktops run is installed.
func tool(name, bin, pkg, what string) doctorCheck {
	if p, err := exec.LookPath(bin); err == nil {
		return doctorCheck{Name: name, Status: checkPass, Detail: p}
	}
	return doctorCheck{Name: name, Status: checkFail, Detail: bin + " is not installed: " + what,
		Fix: "apt install " + pkg}
}

// fontCheck asks fontconfig (fc-list, what the desktops' programs use to
// find fonts) for a font matching pattern; without fc-list it looks for
// the package's file, and says that it did.
func fontCheck(name, pattern, pkg, missing, file string) doctorCheck {
	fail := doctorCheck{Name: name, Status: checkFail, Detail: "no font for it: " + missing + " on desktops", Fix: "apt install " + pkg}
	if fc, err := exec.LookPath("fc-list"); err == nil {
		b, err := exec.Command(fc, pattern, "family").Output()
		if err == nil {
			if first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n"); first != "" {
				return doctorCheck{Name: name, Status: checkPass, Detail: first}
			}
			return fail
		}
	}
	if _, err := os.Stat(file); err == nil {
		return doctorCheck{Name: name, Status: checkPass, Detail: file + " (fc-list is not installed; found by its file)"}
	}
	return fail
}
