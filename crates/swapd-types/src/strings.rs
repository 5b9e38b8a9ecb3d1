//! Enums whose wire names strum declares (per variant, where no case style fits) get their serde
//! from those names, so each name is written once.

/// Serde for a unit enum through its strum names: serialized as its `&'static str`
/// (`strum::IntoStaticStr`), parsed with its `FromStr` (`strum::EnumString`); an unknown name is
/// refused listing the valid ones (`strum::VariantNames`).
#[macro_export]
macro_rules! serde_as_str {
    ($ty:ty) => {
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(<&'static str>::from(*self))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                text.parse().map_err(|_| {
                    ::serde::de::Error::unknown_variant(
                        &text,
                        <$ty as ::strum::VariantNames>::VARIANTS,
                    )
                })
            }
        }
    };
}
