//! The length checks of every family, written once: each error is an
//! [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the
//! argument (`what`), what the entry point `expected` and what it `got`,
//! with one wording: `"{family}: {what} has {got} elements, …"`.

use std::fmt::Display;

use crate::error::{ArgError, Result};

/// `what` must hold exactly `want` elements, the size of `shape` (e.g.
/// `"rows × n = 2 × 3"`): the message reads
/// `"{family}: {what} has {got} elements, expected {shape} = {want}"`.
pub(crate) fn len(
    family: &str,
    what: &str,
    got: usize,
    want: usize,
    shape: impl Display,
) -> Result<()> {
    if got == want {
        return Ok(());
    }
    Err(len_error(family, what, got, want, shape).into())
}

/// The error of [`len`] (for a caller that adds a note with
/// [`ArgError::with_message`]).
pub(crate) fn len_error(
    family: &str,
    what: &str,
    got: usize,
    want: usize,
    shape: impl Display,
) -> ArgError {
    ArgError::new(
        what,
        format!("{shape} = {want} elements"),
        format!("{got} elements"),
    )
    .with_message(format!(
        "{family}: {what} has {got} elements, expected {shape} = {want}"
    ))
}

/// `what` must hold at least `want` elements, as `of` needs: the message
/// reads `"{family}: {what} has {got} elements, {of} needs at least {want}"`.
pub(crate) fn at_least(
    family: &str,
    what: &str,
    got: usize,
    want: usize,
    of: impl Display,
) -> Result<()> {
    if got >= want {
        return Ok(());
    }
    Err(ArgError::new(
        what,
        format!("at least {want} elements ({of})"),
        format!("{got} elements"),
    )
    .with_message(format!(
        "{family}: {what} has {got} elements, {of} needs at least {want}"
    ))
    .into())
}

/// `what` must hold as many elements as `of` (`want`): the message reads
/// `"{family}: {what} has {got} elements, {of} has {want}"`.
pub(crate) fn same_len(family: &str, what: &str, got: usize, want: usize, of: &str) -> Result<()> {
    if got == want {
        return Ok(());
    }
    Err(ArgError::new(
        what,
        format!("{want} elements (as many as {of})"),
        format!("{got} elements"),
    )
    .with_message(format!(
        "{family}: {what} has {got} elements, {of} has {want}"
    ))
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn fields(r: Result<()>) -> (String, String, String, String) {
        let Err(Error::InvalidArgument(a)) = r else {
            panic!("expected InvalidArgument, got {r:?}");
        };
        (
            a.what.clone(),
            a.expected.clone(),
            a.got.clone(),
            a.message().to_string(),
        )
    }

    #[test]
    fn exact_length_names_the_argument() {
        assert!(len("dot", "x", 6, 6, "rows × n").is_ok());
        let (what, expected, got, message) = fields(len("dot", "x", 5, 6, "rows × n = 2 × 3"));
        assert_eq!(what, "x");
        assert_eq!(expected, "rows × n = 2 × 3 = 6 elements");
        assert_eq!(got, "5 elements");
        assert_eq!(
            message,
            "dot: x has 5 elements, expected rows × n = 2 × 3 = 6"
        );
    }

    #[test]
    fn at_least_and_same_len_name_the_argument() {
        assert!(at_least("f", "y", 7, 6, "the shape").is_ok());
        let (what, expected, got, message) = fields(at_least("f", "y", 5, 6, "the shape"));
        assert_eq!((what.as_str(), got.as_str()), ("y", "5 elements"));
        assert_eq!(expected, "at least 6 elements (the shape)");
        assert_eq!(message, "f: y has 5 elements, the shape needs at least 6");
        assert!(same_len("f", "out", 3, 3, "x").is_ok());
        let (what, expected, got, message) = fields(same_len("f", "out", 2, 3, "x"));
        assert_eq!((what.as_str(), got.as_str()), ("out", "2 elements"));
        assert_eq!(expected, "3 elements (as many as x)");
        assert_eq!(message, "f: out has 2 elements, x has 3");
    }
}
