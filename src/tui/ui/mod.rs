//! Drawing helpers that take what they draw as arguments: the theme,
//! screen geometry, text formatting.

pub mod fmt;
pub mod geom;
pub mod theme;
