//! Agent providers behind one trait.
