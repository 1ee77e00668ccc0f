//! The one declaration of the stack's stable refusal-code enums ([`stable_codes!`]).

/// Declares a refusal-code enum whose string forms cross a wire: each variant with its stable
/// string, `ALL` (every code in declaration order), `as_str` and `from_str_code`; with a class
/// type after the name (`enum Code: Class { A => "a", Kind, }`), also `class`. The enum derives
/// `Debug, Clone, Copy, PartialEq, Eq, Hash` and is `#[non_exhaustive]`. Used by the strict
/// decoder's codes (`jouleclaw_jcr1::RefusalCode`) and the structured validator's
/// (`jouleclaw_structured::RefusalCode`), so that both keep one shape.
#[macro_export]
#[doc(hidden)]
macro_rules! stable_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$doc:meta])* $variant:ident => $code:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        $vis enum $name {
            $($(#[$doc])* $variant,)*
        }

        impl $name {
            /// Every code, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The stable string form.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $code,)*
                }
            }

            /// The code with string form `s`.
            pub fn from_str_code(s: &str) -> Option<Self> {
                match s {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $class_type:ident {
            $($(#[$doc:meta])* $variant:ident => $code:literal, $class:ident,)*
        }
    ) => {
        $crate::stable_codes! {
            $(#[$meta])*
            $vis enum $name {
                $($(#[$doc])* $variant => $code,)*
            }
        }

        impl $name {
            /// The code's class.
            pub fn class(self) -> $class_type {
                match self {
                    $($name::$variant => $class_type::$class,)*
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    /// Two classes for the test enum.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Class {
        First,
        Second,
    }

    crate::stable_codes! {
        /// Without classes.
        enum Plain {
            /// One.
            One => "one",
            /// Two.
            Two => "two",
        }
    }

    crate::stable_codes! {
        /// With classes.
        enum Classed: Class {
            /// A.
            A => "a", First,
            /// B.
            B => "b", Second,
        }
    }

    #[test]
    fn every_code_round_trips_in_declaration_order() {
        assert_eq!(Plain::ALL, &[Plain::One, Plain::Two]);
        for c in Plain::ALL {
            assert_eq!(Plain::from_str_code(c.as_str()), Some(*c));
        }
        assert_eq!(Plain::Two.as_str(), "two");
        assert_eq!(Plain::from_str_code("three"), None);
        assert_eq!(Classed::ALL, &[Classed::A, Classed::B]);
        assert_eq!(Classed::from_str_code("b"), Some(Classed::B));
        assert_eq!(Classed::A.as_str(), "a");
        assert_eq!(Classed::A.class(), Class::First);
        assert_eq!(Classed::B.class(), Class::Second);
    }
}
