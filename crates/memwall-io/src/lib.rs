//! memwall-io
