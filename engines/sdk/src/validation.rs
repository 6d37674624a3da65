//! Field-level validation failures (the `errors` of a 422) and the small rule checks engines use
//! to build them: [`ValidationErrors`] and [`is_email`] are `tessera-wire`'s, the same type the
//! host uses.
//!
//! ```
//! use tessera_sdk::{ApiError, ValidationErrors};
//!
//! fn validate(title: &str) -> Result<(), ApiError> {
//!     let mut errors = ValidationErrors::new();
//!     errors.check_length(title, "title", 1, 200);
//!     errors.into_result()?; // a 422 through `From<ValidationErrors> for ApiError`
//!     Ok(())
//! }
//!
//! assert!(validate("A title").is_ok());
//! let Err(ApiError::Validation(errors)) = validate("") else {
//!     panic!("expected a 422");
//! };
//! assert_eq!(errors.fields()["title"], vec!["min:1".to_string()]);
//! ```

pub use tessera_wire::{ValidationErrors, is_email};
