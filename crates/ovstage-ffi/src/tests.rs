//! Tests of the exports, called as C would call them.
