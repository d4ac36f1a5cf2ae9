//! memwall-sim
