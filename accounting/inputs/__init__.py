"""Finance and sustainability inputs through the API: prices, tariffs, PUE, GPU assets, with an audit
trail and locked periods."""
