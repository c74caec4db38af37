package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
)

// iconSize is the size hosts recommend for a bundle's icon.
const iconSize = 512

// icon draws the bundle's icon: a prompt ("›_") on a rounded square. It
// is drawn at build time rather than committed so the repository holds
// no binary file, and it is the same bytes on every build.
func icon() ([]byte, error) {
	const ss = 4 // samples per pixel side, for smooth edges
	img := image.NewNRGBA(image.Rect(0, 0, iconSize, iconSize))
	top := [3]float64{0x4f, 0x46, 0xe5}    // indigo
	bottom := [3]float64{0x7c, 0x3a, 0xed} // violet
	for y := 0; y < iconSize; y++ {
		for x := 0; x < iconSize; x++ {
			var bg, fg float64
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					px := (float64(x) + (float64(sx)+0.5)/ss) / iconSize
					py := (float64(y) + (float64(sy)+0.5)/ss) / iconSize
					if inRoundedSquare(px, py) {
						bg++
						if inGlyph(px, py) {
							fg++
						}
					}
				}
			}
			if bg == 0 {
				continue
			}
			t := float64(y) / iconSize
			cover, white := bg/(ss*ss), fg/bg
			var c [3]float64
			for i := range c {
				c[i] = (top[i]*(1-t)+bottom[i]*t)*(1-white) + 255*white
			}
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(c[0]), G: uint8(c[1]), B: uint8(c[2]), A: uint8(math.Round(255 * cover))})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("icon: %w", err)
	}
	return b.Bytes(), nil
}

// inRoundedSquare: the unit square less corners of radius 0.2, inset by
// a margin so the icon does not touch its frame.
func inRoundedSquare(x, y float64) bool {
	const m, r = 0.04, 0.2
	if x < m || x > 1-m || y < m || y > 1-m {
		return false
	}
	cx := math.Max(m+r-x, math.Max(0, x-(1-m-r)))
	cy := math.Max(m+r-y, math.Max(0, y-(1-m-r)))
	return cx*cx+cy*cy <= r*r
}

// inGlyph: a chevron and an underscore, stroked 0.07 wide.
func inGlyph(x, y float64) bool {
	const w = 0.035
	near := func(ax, ay, bx, by float64) bool {
		dx, dy := bx-ax, by-ay
		t := math.Max(0, math.Min(1, ((x-ax)*dx+(y-ay)*dy)/(dx*dx+dy*dy)))
		ex, ey := x-(ax+t*dx), y-(ay+t*dy)
		return ex*ex+ey*ey <= w*w
	}
	return near(0.26, 0.32, 0.46, 0.5) || near(0.46, 0.5, 0.26, 0.68) || near(0.54, 0.68, 0.74, 0.68)
}
