from polygrad_conformance.cli import main

raise SystemExit(main())
