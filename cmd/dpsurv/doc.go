// Command dpsurv streams time-to-event records through local privacy
// mechanisms and publishes differentially private survival fits.
package main
