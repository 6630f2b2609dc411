package main

import (
	"os"
	"os/exec"
	"strings"
)

// checkDesktops answers whether agents' desktops can work here: the X
// server and window manager they run, and fonts for the text agents meet
// most often drawn as boxes (CJK, emoji). Each names its Debian package.
func checkDesktops() []doctorCheck {
	var out []doctorCheck
	tool := func(name, bin, pkg, what string) doctorCheck {
		if p, err := exec.LookPath(bin); err == nil {
			return doctorCheck{Name: name, Status: checkPass, Detail: p}
		}
		return doctorCheck{Name: name, Status: checkFail, Detail: bin + " is not installed: " + what,
			Fix: "apt install " + pkg}
	}
	out = append(out, tool("desktop server", "Xvfb", "xvfb", "agentctl desktop new cannot start a desktop"))
	out = append(out, tool("desktop wm", "openbox", "openbox", "desktops need --wm none"))
	out = append(out, fontCheck("cjk fonts", ":lang=zh", "fonts-noto-cjk", "Chinese, Japanese and Korean text is drawn as boxes",
		"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"))
	out = append(out, fontCheck("emoji fonts", ":charset=1f600:color=true", "fonts-noto-color-emoji", "emoji are drawn as boxes",
		"/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"))
	return out
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
