from eagle3tui.cli import main

raise SystemExit(main())
