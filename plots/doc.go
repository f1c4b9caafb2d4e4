// Package plots draws survival curves (step functions with optional
// confidence bands) to PNG or SVG with gonum/plot. It only draws what it is
// given: callers pass released (private) or non-private curves and say which
// in the title.
package plots
