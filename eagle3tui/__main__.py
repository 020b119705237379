from eagle3tui.frontends.cli import main

raise SystemExit(main())
