"""ccopt's notion of time: machine descriptions, cost functions, an event engine, ASTRA-sim's
analytical backends and traces. It reads IR and never rewrites it; passes may import it, it
imports no pass, backend or tool."""
