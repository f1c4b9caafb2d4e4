// Package shareddata locates the shared real datasets (R's survival package
// data, simplified) that tests read: ../shared/data beside the repository
// root, as on every developer machine and in CI, or $DPSURV_SHARED_DATA.
package shareddata
