//! Enums whose values have names on the command line and in JSON: methods, modes, patterns,
//! formats. [`named_enum!`](crate::named_enum) declares such an enum once; its name list, parser, `clap` value
//! list ("expected one of ..."), serde form and `Display` all come from that one declaration.

/// Declares a `Copy` enum whose variants have a canonical name and optional aliases.
///
/// ```
/// iolab::named_enum! {
///     /// A colour.
///     pub enum Colour {
///         /// Red.
///         Red = "red" | "rouge",
///         /// Blue.
///         Blue = "blue",
///     }
/// }
/// assert_eq!(Colour::Red.name(), "red");
/// assert_eq!("ROUGE".parse::<Colour>().unwrap(), Colour::Red);
/// assert!("green".parse::<Colour>().unwrap_err().contains("expected one of: red, blue"));
/// assert_eq!(serde_json::to_string(&Colour::Blue).unwrap(), "\"blue\"");
/// ```
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $name:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $ty {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: [$ty; [$(stringify!($variant)),+].len()] = [$($ty::$variant),+];

            /// The canonical name, as the command line and JSON spell it.
            pub fn name(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }

            /// The value named `text` (canonical name or alias, any case, spaces trimmed).
            pub fn from_name(text: &str) -> Option<$ty> {
                let t = text.trim();
                $(
                    if t.eq_ignore_ascii_case($name) $(|| t.eq_ignore_ascii_case($alias))* {
                        return Some($ty::$variant);
                    }
                )+
                None
            }

            /// The canonical names joined with ", ", for messages.
            pub fn names() -> String {
                [$($name),+].join(", ")
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = String;
            fn from_str(text: &str) -> ::std::result::Result<Self, String> {
                $ty::from_name(text).ok_or_else(|| {
                    format!("invalid value '{}'; expected one of: {}", text, $ty::names())
                })
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::clap::ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &$ty::ALL
            }
            fn to_possible_value(&self) -> Option<::clap::builder::PossibleValue> {
                Some(match self {
                    $($ty::$variant => ::clap::builder::PossibleValue::new($name)
                        $(.alias($alias))*),+
                })
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl ::schemars::JsonSchema for $ty {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({
                    "type": "string",
                    "enum": [$($name),+]
                })
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                text.parse().map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }
    };
}

/// Declares a method enum with [`named_enum!`](crate::named_enum) and the engine behind each
/// value: one line per method, `Variant = "name" | "alias" => ENGINE`. `engine()` returns it as a
/// `&'static dyn` of the given trait.
macro_rules! method_list {
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident: $engine:ident {
            $( $(#[$m:meta])* $variant:ident = $name:literal $(| $alias:literal)* => $eng:expr ),+ $(,)?
        }
    ) => {
        $crate::named_enum! {
            $(#[$meta])*
            $vis enum $ty {
                $( $(#[$m])* $variant = $name $(| $alias)* ),+
            }
        }

        impl $ty {
            /// The engine that implements this method.
            pub fn engine(self) -> &'static dyn $engine {
                match self {
                    $( $ty::$variant => &$eng ),+
                }
            }
        }
    };
}
pub(crate) use method_list;
