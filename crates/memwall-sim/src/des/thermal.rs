//! Thermal RC network and governor (to be written).
