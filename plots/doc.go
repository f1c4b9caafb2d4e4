// Package plots draws survival figures to PNG (1800 px wide) or SVG with
// gonum/plot, in two steps: BuildKM turns a KMSpec (the curves as
// released, or a non-private reference, and what to say about them) into
// a Figure — the drawing model, every polyline, area, mark, legend entry
// and number-at-risk cell in data coordinates — and Figure.Write renders
// it. Tests check the model (plotstest.CheckKM), not pixels.
//
// The package only draws what it is given: a private figure is
// post-processing of a release. Its rules:
//   - a cohort's colour is a function of its position in the public label
//     list (CohortColour: Okabe–Ito, with dash patterns from the eighth
//     label), the same in every figure drawn from that list;
//   - a curve is the released step function from (0, 1), to its end; from
//     its noise-dominated time on it is drawn lighter, continuing from the
//     last point drawn before that time (never a separate curve from
//     (0, 1));
//   - the pointwise interval is shaded and the simultaneous band dotted,
//     each with its level in the legend; censoring marks sit on the curve;
//     the number-at-risk table sits under the time axis, labelled as noisy
//     for a private release; the legend sits right of the data; the time
//     axis names its unit; a low_information cohort is named in the legend
//     and a subtitle.
package plots
