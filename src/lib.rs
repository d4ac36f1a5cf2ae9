//! memwall
