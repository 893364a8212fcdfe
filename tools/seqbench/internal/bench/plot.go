//go:build linux

package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strings"
)

// Plot draws two bar charts, events/s and capture %, one group of bars per
// workload × CPU count and one bar per transport, as a PNG.
func Plot(w io.Writer, results []Result) error {
	const (
		W, H   = 1200, 800
		left   = 100
		right  = 20
		scale  = 2
		panelH = 250
	)
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)

	var groups []string
	var transports []string
	seen := map[string]bool{}
	val := map[[2]string]Result{}
	for _, r := range results {
		if r.Transport == string(Hook) || r.Transport == string(Stage) {
			continue // nothing emitted: no rate, no capture
		}
		g := fmt.Sprintf("%s %d CPU", r.Workload, r.CPUs)
		if !seen["g"+g] {
			seen["g"+g] = true
			groups = append(groups, g)
		}
		if !seen["t"+r.Transport] {
			seen["t"+r.Transport] = true
			transports = append(transports, r.Transport)
		}
		val[[2]string{g, r.Transport}] = r
	}
	if len(groups) == 0 {
		return png.Encode(w, img)
	}
	palette := []color.RGBA{
		{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	}
	black := color.RGBA{0, 0, 0, 255}
	grey := color.RGBA{210, 210, 210, 255}

	text(img, left, 12, "SEQBENCH: EVENTS/S AND CAPTURE % BY TRANSPORT", scale, black)
	// Legend.
	lx := left + 560
	for i, t := range transports {
		c := palette[i%len(palette)]
		fill(img, image.Rect(lx, 10, lx+14, 24), c)
		text(img, lx+20, 12, t, scale, black)
		lx += 30 + len(t)*8
	}

	// panel draws one chart; with log the axis is log10, a tick per decade.
	panel := func(top int, title string, get func(Result) float64, maxV float64, log bool, label func(float64) string) {
		bottom := top + panelH
		plotW := W - left - right
		text(img, 10, top-34, title, scale, black)
		frac := func(v float64) float64 {
			if log {
				return math.Log10(math.Max(v, 1)) / math.Log10(maxV)
			}
			return math.Min(v, maxV) / maxV
		}
		ticks := 4
		if log {
			ticks = int(math.Round(math.Log10(maxV)))
		}
		// Axis and grid.
		for i := 0; i <= ticks; i++ {
			v := maxV * float64(i) / float64(ticks)
			if log {
				v = math.Pow(10, float64(i))
			}
			y := bottom - int(float64(panelH)*float64(i)/float64(ticks))
			fill(img, image.Rect(left, y, W-right, y+1), grey)
			s := label(v)
			text(img, left-8-len(s)*8, y-5, s, scale, black)
		}
		fill(img, image.Rect(left, top, left+1, bottom+1), black)
		fill(img, image.Rect(left, bottom, W-right, bottom+1), black)
		gw := plotW / len(groups)
		bw := max(4, gw*8/10/len(transports))
		for gi, g := range groups {
			x0 := left + gi*gw + gw/10
			for ti, t := range transports {
				r, ok := val[[2]string{g, t}]
				if !ok || r.Error != "" && r.Issued == 0 {
					continue
				}
				v := get(r)
				h := int(math.Round(float64(panelH) * math.Min(frac(v), 1)))
				x := x0 + ti*bw
				fill(img, image.Rect(x, bottom-h, x+bw-2, bottom), palette[ti%len(palette)])
				s := label(v)
				if len(s)*8 <= bw+6 {
					text(img, x+(bw-2-len(s)*8)/2+1, bottom-h-13, s, scale, black)
				} else {
					text(img, x, bottom-h-13, s, 1, black)
				}
			}
			text(img, left+gi*gw+(gw-len(g)*8)/2, bottom+8, g, scale, black)
		}
	}

	maxRate := 0.0
	for _, r := range results {
		maxRate = math.Max(maxRate, r.EventsPerSec)
	}
	decades := math.Max(1, math.Ceil(math.Log10(math.Max(maxRate, 10))))
	panel(90, "EVENTS/S DELIVERED (LOG SCALE)", func(r Result) float64 { return r.EventsPerSec }, math.Pow(10, decades), true, rateLabel)
	panel(90+panelH+120, "CAPTURE % (DELIVERED/ISSUED)", func(r Result) float64 { return r.CapturePct }, 100, false,
		func(v float64) string {
			if v == 100 || v == math.Trunc(v) {
				return fmt.Sprintf("%.0f", v)
			}
			return fmt.Sprintf("%.1f", math.Floor(v*10)/10)
		})
	return png.Encode(w, img)
}

func rateLabel(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "K"
	}
	return fmt.Sprintf("%.0f", v)
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

// text draws s in a 3×5 pixel font, each pixel scale×scale, top-left at (x, y).
func text(img *image.RGBA, x, y int, s string, scale int, c color.Color) {
	for _, ch := range strings.ToUpper(s) {
		g, ok := font[ch]
		if !ok {
			g = font['?']
		}
		for row, line := range g {
			for col, px := range line {
				if px == '#' {
					fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
				}
			}
		}
		x += 4 * scale
	}
}

var font = map[rune][5]string{
	'A': {".#.", "#.#", "###", "#.#", "#.#"}, 'B': {"##.", "#.#", "##.", "#.#", "##."},
	'C': {".##", "#..", "#..", "#..", ".##"}, 'D': {"##.", "#.#", "#.#", "#.#", "##."},
	'E': {"###", "#..", "##.", "#..", "###"}, 'F': {"###", "#..", "##.", "#..", "#.."},
	'G': {".##", "#..", "#.#", "#.#", ".##"}, 'H': {"#.#", "#.#", "###", "#.#", "#.#"},
	'I': {"###", ".#.", ".#.", ".#.", "###"}, 'J': {"..#", "..#", "..#", "#.#", ".#."},
	'K': {"#.#", "#.#", "##.", "#.#", "#.#"}, 'L': {"#..", "#..", "#..", "#..", "###"},
	'M': {"#.#", "###", "#.#", "#.#", "#.#"}, 'N': {"##.", "#.#", "#.#", "#.#", "#.#"},
	'O': {".#.", "#.#", "#.#", "#.#", ".#."}, 'P': {"##.", "#.#", "##.", "#..", "#.."},
	'Q': {".#.", "#.#", "#.#", "##.", ".##"}, 'R': {"##.", "#.#", "##.", "#.#", "#.#"},
	'S': {".##", "#..", ".#.", "..#", "##."}, 'T': {"###", ".#.", ".#.", ".#.", ".#."},
	'U': {"#.#", "#.#", "#.#", "#.#", "###"}, 'V': {"#.#", "#.#", "#.#", "#.#", ".#."},
	'W': {"#.#", "#.#", "#.#", "###", "#.#"}, 'X': {"#.#", "#.#", ".#.", "#.#", "#.#"},
	'Y': {"#.#", "#.#", ".#.", ".#.", ".#."}, 'Z': {"###", "..#", ".#.", "#..", "###"},
	'0': {"###", "#.#", "#.#", "#.#", "###"}, '1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"##.", "..#", ".#.", "#..", "###"}, '3': {"##.", "..#", ".#.", "..#", "##."},
	'4': {"#.#", "#.#", "###", "..#", "..#"}, '5': {"###", "#..", "##.", "..#", "##."},
	'6': {".##", "#..", "###", "#.#", "###"}, '7': {"###", "..#", ".#.", ".#.", ".#."},
	'8': {"###", "#.#", "###", "#.#", "###"}, '9': {"###", "#.#", "###", "..#", "##."},
	'.': {"...", "...", "...", "...", ".#."}, '%': {"#.#", "..#", ".#.", "#..", "#.#"},
	'-': {"...", "...", "###", "...", "..."}, '/': {"..#", "..#", ".#.", "#..", "#.."},
	':': {"...", ".#.", "...", ".#.", "..."}, ',': {"...", "...", "...", ".#.", "#.."},
	'(': {".#.", "#..", "#..", "#..", ".#."}, ')': {".#.", "..#", "..#", "..#", ".#."},
	' ': {"...", "...", "...", "...", "..."}, '?': {"##.", "..#", ".#.", "...", ".#."},
	'=': {"...", "###", "...", "###", "..."}, '+': {"...", ".#.", "###", ".#.", "..."},
}
