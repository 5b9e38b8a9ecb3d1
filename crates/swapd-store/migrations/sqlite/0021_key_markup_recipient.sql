-- Where the onchain routers that pay fees to addresses pay a partner's markup: an EVM address
-- (docs/fees.md); without one they leave the markup out.
ALTER TABLE api_keys ADD COLUMN markup_recipient TEXT;
